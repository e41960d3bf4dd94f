import type { LaunchSpec } from '../../src/run-record/types.js';

/** A launch of a command version's run: `run` as the run queue reads it, `command` what the version runs. */
export function commandLaunch(run: LaunchSpec['run'], command: string[] = ['true']): LaunchSpec {
  return {
    run,
    input: {},
    version: {
      command,
      cwd: null,
      env: {},
      timeout_seconds: null,
      source: 'command',
      status: 'ready',
      bundle_sha256: null,
      variables: null,
    },
    thread: null,
    command: null,
  };
}

/** A run of organization org_a's deployment dep_a, version ver_a, outside any thread. */
export const runOfOrgA = (id: string): LaunchSpec['run'] => ({
  id,
  org_id: 'org_a',
  deployment_id: 'dep_a',
  version_id: 'ver_a',
  thread_id: null,
});
