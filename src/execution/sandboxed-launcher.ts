import type { Logger } from 'pino';
import type { Sandbox, SpareShape } from '../sandbox/index.js';
import type { LaunchedProcess, ProcessLauncher } from './launcher.js';
import { createSparePool } from './sandbox-spares.js';

export interface SpareOptions {
  /** DATA_DIR/runs: where spare sandboxes keep their folders. */
  runsDir: string;
  logger: Logger;
}

/**
 * A launcher whose processes start in the sandbox (CONTRACTS §12): each request's plan is wrapped
 * first. With `spares`, a run takes a sandbox of its shape made ahead when one waits.
 */
export function sandboxedLauncher(inner: ProcessLauncher, sandbox: Sandbox, spares?: SpareOptions): ProcessLauncher {
  if (sandbox.kind === 'none') return inner;
  const pool = spares && sandbox.spareShape ? createSparePool(inner, spares) : null;

  // bwrap's own PID namespace: when its init ends, the kernel ends everything else in it; what is
  // left of its group then is at most a zombie, which the machine's init reaps in its own time. So
  // once bwrap exited there is nothing to end (and no group to watch until that zombie goes).
  const inSandbox = (launched: LaunchedProcess): LaunchedProcess => {
    let gone = false;
    const exited = launched.exit.then(() => {
      gone = true;
    });
    const endGroup = (graceMs: number) => (gone ? exited : Promise.race([launched.endGroup(graceMs), exited]));
    return { ...launched, endGroup };
  };

  /** Once the process ends, a spare of its shape is made for the next one. */
  const afterwards = (launched: LaunchedProcess, shape: SpareShape): LaunchedProcess => {
    void launched.exit.then(() => pool?.madeRoomFor(shape));
    return inSandbox(launched);
  };

  return {
    start() {
      inner.start();
      pool?.removeLeftovers();
    },
    async stop() {
      await pool?.stop();
      await inner.stop();
    },
    async launch(request) {
      const plain = { command: request.command, cwd: request.cwd, env: request.env };
      let plan: ReturnType<Sandbox['wrap']>;
      let shape: SpareShape | null = null;
      try {
        if (pool && request.stdin !== null) {
          shape = sandbox.spareShape?.(plain, request.confinement) ?? null;
          const spare = shape ? pool.take(shape, request.stdin) : null;
          if (spare && shape) return afterwards(spare, shape);
        }
        plan = shape ? shape.fresh() : sandbox.wrap(plain, request.confinement);
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) };
      }
      const launched = await inner.launch({ ...request, ...plan });
      if ('error' in launched) return launched;
      return shape ? afterwards(launched, shape) : inSandbox(launched);
    },
  };
}
