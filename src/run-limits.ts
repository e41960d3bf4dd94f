/** Limits on what one runner may write; docs/runner-protocol.md states them for crew authors. */
export const RUN_LIMITS = {
  /** One line of standard output or standard error; a longer line becomes a `log` event saying so. */
  maxLineBytes: 1024 * 1024,
  /** Events a build may write to its log; later ones are dropped and one `log` event says so. */
  maxEventsPerRun: 10_000,
  /** The serialised `output` of a result; a larger one fails the run. */
  maxOutputBytes: 1024 * 1024,
  /** How much of an over-long line the notice keeps. */
  truncatedHeadBytes: 1024,
} as const;

/**
 * What one run may use (CONTRACTS §12 "Limits"), each an operator setting. The sandbox applies the
 * first five to the run's processes; the event log counts the last two.
 */
export interface RunLimits {
  /** RUN_MEMORY_MB: the data size (RLIMIT_DATA) of each of its processes. */
  memoryMb: number;
  /** RUN_CPU_SECONDS: CPU time of each of its processes (RLIMIT_CPU: SIGXCPU, then SIGKILL). */
  cpuSeconds: number;
  /** RUN_MAX_PROCESSES: processes alive at once in its sandbox. */
  processes: number;
  /** RUN_TMP_MB and RUN_HOME_MB: the size of its /tmp and of its home. */
  tmpMb: number;
  homeMb: number;
  /** RUN_MAX_EVENTS: events it may write; one more fails it. */
  events: number;
  /** RUN_MAX_OUTPUT_MB: bytes of events it may write; more fail it. */
  outputMb: number;
}

export const DEFAULT_RUN_LIMITS: RunLimits = {
  memoryMb: 4096,
  cpuSeconds: 3600,
  processes: 512,
  tmpMb: 1024,
  homeMb: 1024,
  events: 10_000,
  outputMb: 64,
};

/** The error of a run that wrote too much (counted by its event log). */
export function outputLimitError(limits: RunLimits, kind: 'events' | 'bytes'): string {
  if (kind === 'events') return `the run wrote more than RUN_MAX_EVENTS=${limits.events} events`;
  return `the run wrote more than RUN_MAX_OUTPUT_MB=${limits.outputMb} MiB of events`;
}

/** SIGXCPU's number on Linux: bwrap reports a command ended by signal N as exit code 128 + N. */
const SIGXCPU = 24;

/** What a process prints as it dies of a limit: Python's, Node's and the shell's words for each. */
const MEMORY = /\bMemoryError\b|out of memory|Cannot allocate memory|std::bad_alloc|ENOMEM/i;
const PROCESSES = /Resource temporarily unavailable|Cannot fork|fork: retry|EAGAIN|BlockingIOError/;
const SPACE = /No space left on device|ENOSPC|Disk quota exceeded/;

/**
 * Which limit ended a sandboxed run, as far as its exit status and last line of standard error
 * show it, as the run's error naming the setting; null when none did.
 */
export function limitHit(
  limits: RunLimits,
  exit: { code: number | null; signal: NodeJS.Signals | null },
  lastStderr: string | null,
): string | null {
  if (exit.code === 128 + SIGXCPU || exit.signal === 'SIGXCPU') {
    return `the run used more than RUN_CPU_SECONDS=${limits.cpuSeconds} s of CPU`;
  }
  if (lastStderr === null) return null;
  if (MEMORY.test(lastStderr)) return `the run used more than RUN_MEMORY_MB=${limits.memoryMb} MiB of memory`;
  if (PROCESSES.test(lastStderr)) {
    return `the run started more than RUN_MAX_PROCESSES=${limits.processes} processes`;
  }
  if (SPACE.test(lastStderr)) {
    return `the run filled its home or /tmp (RUN_HOME_MB=${limits.homeMb}, RUN_TMP_MB=${limits.tmpMb})`;
  }
  return null;
}
