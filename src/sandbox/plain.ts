import type { Sandbox } from './types.js';

/** No isolation: the runner starts as the plain process it describes (RUNNER_SANDBOX=off, or auto without bwrap). */
export const plainSandbox: Sandbox = {
  kind: 'none',
  wrap: (plan) => ({ ...plan, line: null }),
};
