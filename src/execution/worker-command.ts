/**
 * RUN_ISOLATION (docs/operations.md, "Run isolation"): `run` forks a child per run from the version's fork server
 * (runners/python/crewd_runner/forkserver.py); `deployment` keeps a warm worker per version instead
 * (runners/python/crewd_runner/worker.py), which runs up to RUN_WORKER_CONCURRENCY runs at a time, each in a thread.
 * Both speak the same wire (src/execution/fork-server-launcher.ts), live in a sandbox of their own with only their
 * version's files, and serve only their version's runs.
 */
export type RunIsolation = 'run' | 'deployment';

export interface VersionServerSetting {
  isolation: RunIsolation;
  /** Runs at a time in one worker (`deployment` only; a CrewAI crew or flow runs one at a time). */
  workerConcurrency: number;
}

/** The command that starts a version's server, given `entry` (`--graph`, `graph.py:graph`), its socket and idle time. */
export function versionServerCommand(
  entry: readonly [string, string],
  socket: string,
  idleSeconds: number,
  setting: VersionServerSetting | undefined,
): string[] {
  const common = [...entry, '--socket', socket, '--idle-exit', String(idleSeconds)];
  if (setting?.isolation !== 'deployment') return ['python', '-m', 'crewd_runner.forkserver', ...common];
  return ['python', '-m', 'crewd_runner.worker', ...common, '--concurrency', String(setting.workerConcurrency)];
}
