import { PassThrough } from 'node:stream';
import type { ExitStatus, LaunchedProcess } from './launcher.js';

/** Starts the process, or says why it could not; `signal` aborts when the run no longer wants it. */
export type DeferredLaunch = (signal: AbortSignal) => Promise<LaunchedProcess | { error: string } | null>;

/**
 * A run's process that starts later, standing in for it now: the run counts as started (its POST
 * answers at once) while it waits for its version's server (server-start.ts). Its output, exit,
 * answers and end are the real process's once that started. Ended before then, it starts nothing.
 * A start that fails says why on standard error and exits with 1; an abandoned one (null) with SIGTERM.
 */
export function waitingProcess(start: DeferredLaunch): LaunchedProcess {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const abandon = new AbortController();
  let real: LaunchedProcess | null = null;
  let settleExit: (status: ExitStatus | null) => void = () => {};
  const exit = new Promise<ExitStatus | null>((resolve) => {
    settleExit = resolve;
  });

  const endWithout = (status: ExitStatus, why?: string) => {
    if (why) stderr.write(`${why}\n`);
    stdout.end();
    stderr.end();
    settleExit(status);
  };

  void start(abandon.signal).then(
    (launched) => {
      if (launched === null) return endWithout({ code: null, signal: 'SIGTERM' });
      if ('error' in launched)
        return endWithout({ code: 1, signal: null }, `Failed to start runner: ${launched.error}`);
      real = launched;
      if (abandon.signal.aborted) void launched.endGroup(0);
      launched.stdout.pipe(stdout);
      launched.stderr.pipe(stderr);
      void launched.exit.then(settleExit);
    },
    (error: unknown) => endWithout({ code: 1, signal: null }, `Failed to start runner: ${String(error)}`),
  );

  return {
    pid: 0,
    stdout,
    stderr,
    exit,
    get limited() {
      return real?.limited;
    },
    sendStdin: (text, keepOpen) => {
      if (!real) throw new Error('the run has not started yet: its standard input goes with its request');
      real.sendStdin(text, keepOpen);
    },
    answer: (line) => real?.answer?.(line),
    endGroup: async (graceMs) => {
      if (real) return real.endGroup(graceMs);
      abandon.abort();
      await exit;
      if (real) await (real as LaunchedProcess).endGroup(graceMs);
    },
  };
}
