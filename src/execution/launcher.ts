import type { Readable } from 'node:stream';
import type { Confinement } from '../sandbox/types.js';

/** What a run's (or a build step's) process is started with. */
export interface LaunchRequest {
  /** argv, started without a shell. */
  command: string[];
  cwd: string;
  env: Record<string, string>;
  /** Written to standard input, which is then closed; null leaves it open for `sendStdin`. */
  stdin: string | null;
  /**
   * Standard input stays open after `stdin` for `answer` lines (docs/runner-protocol.md, "Calls"): only for a
   * runner known to read one line of request (crewd's Python runner), since others read their input to its end.
   */
  keepStdinOpen?: boolean;
  /** What the process may touch beyond the machine's files: its working folder, a version's built files. */
  confinement: Confinement;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface LaunchedProcess {
  /** Leader of the process's own group: signals to `-pid` reach everything it started. */
  pid: number;
  stdout: Readable;
  stderr: Readable;
  /** Writes to standard input and closes it (unless `keepOpen`): for a process launched with `stdin: null`, once. */
  sendStdin(text: string, keepOpen?: boolean): void;
  /**
   * Writes one line to the process while it runs, an answer to one of its calls: on its standard input when it was
   * launched with `keepStdinOpen`, on the connection of a fork server's run. Absent where nothing carries it.
   */
  answer?(line: string): void;
  /** The exit status, or null when it was lost (the spawner died). */
  exit: Promise<ExitStatus | null>;
  /**
   * Ends what is left of the process and whatever it started: SIGTERM to its group, SIGKILL once
   * `graceMs` passed with any of it left; resolves when nothing is left. In the sandbox, once the
   * process exited nothing it started can be left (its own PID namespace ended with it).
   */
  endGroup(graceMs: number): Promise<void>;
  /** The sandbox bounded it with the run limits (RUN_MEMORY_MB, …): an exit may be one of them. */
  limited?: boolean;
}

/**
 * Starts processes in their own process group. Implemented plainly (spawner.ts) and, wrapping
 * that, in a sandbox; runs and builds start their processes through it.
 */
export interface ProcessLauncher {
  /** Readies the launcher ahead of the first process. */
  start(): void;
  launch(request: LaunchRequest): Promise<LaunchedProcess | { error: string }>;
  /** Stops the launcher; processes it started are killed if they still run. */
  stop(): Promise<void>;
}
