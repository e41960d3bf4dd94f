import type { Readable } from 'node:stream';
import { RUN_LIMITS } from '../run-limits.js';
import type { LaunchedProcess, LaunchRequest, ProcessLauncher } from './launcher.js';
import { LineSplitter } from './line-splitter.js';
import { parseLongLine, parseStdoutLine, type RunnerMessage, stderrEvent, withoutNul } from './protocol.js';

export type ProcessExit =
  /**
   * `statusLost`: the runner ended but its exit status went with a crashed spawner. `limited`: it
   * ran within the run limits (in the sandbox), so its exit may be one of them.
   */
  | { kind: 'exited'; code: number | null; signal: NodeJS.Signals | null; statusLost: boolean; limited?: boolean }
  | { kind: 'spawn_failed'; error: string };

export interface RunnerProcess {
  /** Resolves once the process is running (true) or could not start (false). */
  readonly started: Promise<boolean>;
  /** Resolves once the process exited and its output was read to the end. */
  readonly exited: Promise<ProcessExit>;
  /** The last line written to standard error, for failure messages. */
  lastStderrLine(): string | null;
  /** SIGTERM to the group, SIGKILL after the grace; resolves when no process of the group is left. */
  terminate(): Promise<void>;
  /** One line to the running process (an answer to its call); dropped where its launch keeps no channel to it. */
  answer(line: string): void;
}

/** Node's version line and stack frames: what follows an uncaught error's message. */
const NODE_TRAILER = /^(Node\.js v\d+\.\d+\.\d+|\s+at .+)$/;

const closed = (socket: Readable) =>
  new Promise<void>((resolve) => {
    if (socket.destroyed) resolve();
    else socket.once('close', () => resolve());
  });

/**
 * Starts one runner (CONTRACTS §6): argv without a shell, in its own process group, input on
 * stdin, each line of stdout and stderr turned into a message as it arrives.
 */
export function startRunnerProcess(
  launcher: ProcessLauncher,
  request: LaunchRequest,
  options: { killGraceMs: number; onMessage(message: RunnerMessage): void },
): RunnerProcess {
  const { onMessage, killGraceMs } = options;
  let lastStderr: string | null = null;
  let terminating: Promise<void> | null = null;

  const stdoutLines = new LineSplitter(RUN_LIMITS.maxLineBytes, RUN_LIMITS.truncatedHeadBytes, {
    line: (text) => {
      const message = parseStdoutLine(text);
      if (message) onMessage(message);
    },
    longLine: (line) => onMessage(parseLongLine(line, 'stdout')),
  });
  const stderrLines = new LineSplitter(RUN_LIMITS.maxLineBytes, RUN_LIMITS.truncatedHeadBytes, {
    line: (raw) => {
      if (raw.trim() === '') return;
      const text = withoutNul(raw);
      // Node ends an uncaught error with its stack and its version; the error's own line says what went wrong.
      if (!NODE_TRAILER.test(text)) lastStderr = text;
      onMessage(stderrEvent(text));
    },
    longLine: (line) => {
      lastStderr = withoutNul(line.head);
      onMessage(parseLongLine(line, 'stderr'));
    },
  });

  let launched: LaunchedProcess | undefined;
  let terminateRequested = false;
  const terminate = () => {
    if (launched === undefined) {
      // Still starting: it is stopped as soon as it runs.
      terminateRequested = true;
      return Promise.resolve();
    }
    terminating ??= launched.endGroup(killGraceMs);
    return terminating;
  };

  const spawned = launcher.launch(request);
  const started = spawned.then((result) => !('error' in result));
  const exited = spawned.then(async (result): Promise<ProcessExit> => {
    if ('error' in result) return { kind: 'spawn_failed', error: result.error };
    launched = result;
    if (terminateRequested) void terminate();
    const { stdout, stderr } = result;
    stdout.on('data', (chunk: Buffer) => stdoutLines.push(chunk));
    stderr.on('data', (chunk: Buffer) => stderrLines.push(chunk));
    stdout.once('end', () => stdoutLines.end());
    stderr.once('end', () => stderrLines.end());
    stdout.on('error', () => {});
    stderr.on('error', () => {});
    const status = await result.exit;
    // The leader is gone; whatever it left in its group goes too, which also lets the pipes close.
    void terminate();
    // The pipes close once the group is gone; should anything still hold them, stop waiting.
    const bound = setTimeout(() => {
      stdout.destroy();
      stderr.destroy();
    }, killGraceMs + 2000);
    await Promise.all([closed(stdout), closed(stderr)]);
    clearTimeout(bound);
    const limited = result.limited === true;
    return {
      kind: 'exited',
      code: status?.code ?? null,
      signal: status?.signal ?? null,
      statusLost: status === null,
      limited,
    };
  });

  return {
    started,
    exited,
    lastStderrLine: () => lastStderr,
    terminate,
    answer: (line) => launched?.answer?.(line),
  };
}
