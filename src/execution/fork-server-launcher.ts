import net from 'node:net';
import { constants } from 'node:os';
import { PassThrough } from 'node:stream';
import type { ExitStatus, LaunchedProcess, LaunchRequest, ProcessLauncher } from './launcher.js';
import type { ColdTurn, ServerStart } from './server-start.js';
import { waitingProcess } from './waiting-process.js';

/** Where a version's fork server listens, and the secret that proves a connection is crewd's. */
export interface ForkServerAddress {
  path: string;
  /** 32 random bytes in hex, given to the server on its standard input (src/builds/fork-servers.ts). */
  secret: string;
  /**
   * Where the server sees the version's files, when not where crewd does (an environment's version server sees
   * them in its portal, src/builds/environment-servers.ts): the run's folder and PYTHONPATH are moved there.
   */
  moved?: { from: string; to: string };
  /** The server's start, while its runs may find it not listening yet (server-start.ts). */
  start?: ServerStart;
}

/** `value`'s `:`-separated paths inside `from`, moved to `to`. */
export function movedPaths(value: string, from: string, to: string): string {
  return value
    .split(':')
    .map((entry) => (entry === from || entry.startsWith(`${from}/`) ? to + entry.slice(from.length) : entry))
    .join(':');
}

/** The run's folder and variables as its server sees them. */
function seenBy(server: ForkServerAddress, request: LaunchRequest): { cwd: string; env: Record<string, string> } {
  const { moved } = server;
  if (!moved) return { cwd: request.cwd, env: request.env };
  const env = { ...request.env };
  if (env.PYTHONPATH !== undefined) env.PYTHONPATH = movedPaths(env.PYTHONPATH, moved.from, moved.to);
  return { cwd: movedPaths(request.cwd, moved.from, moved.to), env };
}

/** The byte before the server's last words: the runner's JSON lines never hold a raw NUL. */
const NUL = 0;

/** Why a run whose connection closed without the server's last words is lost (its error, active-run.ts). */
export const SERVER_ENDED =
  "the version's Python server (its fork server, or under RUN_ISOLATION=deployment its worker) ended before the " +
  'run did; a crash of a worker ends each of its runs';

/**
 * The run's exit from the server's last line: `{"exit_code": N}`, `{"signal": N}`, or `{"error": "…"}` (the server
 * could not take the run: its reason is written where the run's output goes, and the run exits with 1).
 */
function exitStatus(line: string, output: PassThrough): ExitStatus | null {
  let final: { exit_code?: unknown; signal?: unknown; error?: unknown };
  try {
    final = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof final.exit_code === 'number') return { code: final.exit_code, signal: null };
  if (typeof final.error === 'string') {
    output.write(`the fork server refused the run: ${final.error}\n`);
    return { code: 1, signal: null };
  }
  if (typeof final.signal !== 'number') return null;
  const name = Object.entries(constants.signals).find(([, number]) => number === final.signal)?.[0];
  return { code: null, signal: (name ?? null) as NodeJS.Signals | null };
}

/** Splits what the connection carries into the child's output and the server's final line. */
function splitOutput(socket: net.Socket, stdout: PassThrough, ended: (final: string | null) => void): void {
  let final: Buffer[] | null = null;
  socket.on('data', (chunk: Buffer) => {
    if (final) {
      final.push(chunk);
      return;
    }
    const at = chunk.indexOf(NUL);
    if (at < 0) {
      stdout.write(chunk);
      return;
    }
    if (at > 0) stdout.write(chunk.subarray(0, at));
    final = [chunk.subarray(at + 1)];
  });
  socket.once('close', () => {
    ended(final ? Buffer.concat(final).toString('utf8').trim() : null);
    stdout.end();
  });
}

/**
 * A run in a child of its version's fork server (runners/python/crewd_runner/forkserver.py): one
 * connection carries the request, the child's output and, after a NUL byte, its exit; stop
 * signals go to the server as lines. Resolves null when no server listens at `server.path`.
 */
export function launchInForkServer(server: ForkServerAddress, request: LaunchRequest): Promise<LaunchedProcess | null> {
  return new Promise((resolveLaunch) => {
    const socket = net.createConnection(server.path);
    socket.once('error', () => resolveLaunch(null));
    socket.once('connect', () => {
      socket.removeAllListeners('error');
      socket.on('error', () => socket.destroy());
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      let resolveExit: (status: ExitStatus | null) => void = () => {};
      const exit = new Promise<ExitStatus | null>((resolve) => {
        resolveExit = resolve;
      });
      splitOutput(socket, stdout, (final) => {
        // No last words: the server itself ended (killed, or crashed: a worker's crash ends each of its runs).
        if (final === null) stderr.write(`${SERVER_ENDED}\n`);
        stderr.end();
        resolveExit(final === null ? null : exitStatus(final, stdout));
      });
      const header = { secret: server.secret, ...seenBy(server, request), stdin: request.stdin ?? '' };
      socket.write(`${JSON.stringify(header)}\n`);

      const signal = (number: number) => {
        if (!socket.destroyed) socket.write(`{"signal": ${number}}\n`);
      };
      let ending: Promise<void> | null = null;
      const endGroup = (graceMs: number): Promise<void> => {
        ending ??= (async () => {
          signal(constants.signals.SIGTERM);
          const killer = setTimeout(() => signal(constants.signals.SIGKILL), graceMs);
          await exit;
          clearTimeout(killer);
        })();
        return ending;
      };
      resolveLaunch({
        // The child's pid is the server's to know (it may live in another PID namespace).
        pid: 0,
        stdout,
        // The child's standard error shares the connection with its output; this one only says why a run was lost.
        stderr,
        sendStdin: () => {
          throw new Error('a run in a fork server gets its standard input with its request');
        },
        exit,
        endGroup,
        // The server hands the line to the run's child (its standard input) or, in a worker, to the run's thread.
        answer: (line) => {
          if (!socket.destroyed) socket.write(`${line}\n`);
        },
      });
    });
  });
}

/** Starts a run without the server, holding `turn` until its process is gone. */
async function launchCold(cold: ProcessLauncher, request: LaunchRequest, turn: ColdTurn | null) {
  const launched = await cold.launch(request).catch((error: unknown) => {
    turn?.giveBack();
    throw error;
  });
  if ('error' in launched) turn?.giveBack();
  else if (turn) void launched.exit.finally(() => turn.giveBack());
  return launched;
}

/** The run's process once its server listens, or its turn to run without it comes (null: abandoned). */
async function afterServerStart(
  server: ForkServerAddress,
  start: ServerStart,
  cold: ProcessLauncher,
  request: LaunchRequest,
  signal: AbortSignal,
): Promise<LaunchedProcess | { error: string } | null> {
  const next = await start.next(signal);
  if (next.kind === 'abandoned') return null;
  if (next.kind === 'cold') return launchCold(cold, request, next.turn);
  return (await launchInForkServer(server, request)) ?? launchCold(cold, request, null);
}

/**
 * Runs go to the fork server listening at `server`; where none listens, `cold` starts them as ever.
 * While the server starts, one run at a time goes cold and the others wait for it (server-start.ts).
 */
export function forkServerFirst(server: ForkServerAddress, cold: ProcessLauncher): ProcessLauncher {
  return {
    start: () => cold.start(),
    stop: () => cold.stop(),
    async launch(request) {
      const launched = await launchInForkServer(server, request);
      if (launched) return launched;
      const start = server.start;
      if (!start?.starting) return cold.launch(request);
      const turn = start.takeColdTurn();
      if (turn) return launchCold(cold, request, turn);
      return waitingProcess((signal) => afterServerStart(server, start, cold, request, signal));
    },
  };
}
