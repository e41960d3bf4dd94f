import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { LaunchedProcess, ProcessLauncher } from '../execution/launcher.js';
import { LineSplitter } from '../execution/line-splitter.js';

/** Where and how a version's runs start: its built files as cwd, its env, what it may read. */
export interface ServerPlace {
  cwd: string;
  env: Record<string, string>;
  readOnly: string[];
}

/** A run of a version through its fork server: the socket crewd asks it on (src/execution/fork-server-launcher.ts). */
export interface ForkedRun {
  forkSocket: string;
}

export interface ForkServersOptions {
  launcher: ProcessLauncher;
  logger: Logger;
  /** A server with no run for this long exits (started again by the next run); 0 turns fork servers off. */
  idleSeconds: number;
  killGraceMs: number;
}

interface ForkServer {
  /** What the server was started with: a version whose variables changed needs a new one. */
  key: string;
  folder: string;
  socket: string;
  /** Its process once launched: its group is ended to stop it. */
  process: LaunchedProcess | null;
  exited: Promise<void>;
}

/** After a server failed before it listened, its version runs without one this long, not a failing server per run. */
const RETRY_AFTER_FAILURE_MS = 30_000;
const MAX_LOG_LINE_BYTES = 16 * 1024;

/** `python -m crewd_runner --crew|--flow|--graph TARGET`, as project detection makes it (src/builds/project.ts). */
export function pythonRunnerEntry(command: readonly string[]): [string, string] | null {
  const [program, flag, module, kind, target, ...rest] = command;
  if (program !== 'python' || flag !== '-m' || module !== 'crewd_runner' || rest.length > 0) return null;
  if (kind !== '--crew' && kind !== '--flow' && kind !== '--graph') return null;
  return target ? [kind, target] : null;
}

function logLines(stream: Readable, log: (line: string) => void): void {
  const lines = new LineSplitter(MAX_LOG_LINE_BYTES, MAX_LOG_LINE_BYTES, {
    line: (text) => {
      if (text.trim() !== '') log(text);
    },
    longLine: (line) => log(`${line.head}… (${line.bytes} bytes)`),
  });
  stream.on('data', (chunk: Buffer) => lines.push(chunk));
  stream.once('end', () => lines.end());
  stream.on('error', () => {});
}

/**
 * The Python fork servers of this instance (docs/python-crews.md): one per Python bundle version,
 * started at the version's first run here, in a sandbox of its own with the version's built files
 * and its socket folder, and nothing of DATA_DIR. The runs stay processes of their own: crewd asks
 * the server for each on its socket, and starts the version's command as ever when none listens.
 */
export function createForkServers(options: ForkServersOptions) {
  const { launcher, logger } = options;
  /** The current server of each version. */
  const servers = new Map<string, ForkServer>();
  /** Current and retired servers still running. */
  const live = new Set<ForkServer>();
  const failedAt = new Map<string, number>();
  let root: string | null = null;
  let count = 0;
  let stopping = false;

  /**
   * A folder per version for its servers' sockets, under one short root (a socket path has at most 108 bytes),
   * outside DATA_DIR, bound writable into the server's sandbox. It stays until crewd stops.
   */
  function socketFolder(versionId: string): string {
    root ??= mkdtempSync(path.join(tmpdir(), 'crewd-fork-'));
    const folder = path.join(root, versionId);
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    return folder;
  }

  async function serve(versionId: string, server: ForkServer, command: string[], place: ServerPlace): Promise<void> {
    const confinement = { writable: [server.folder], readOnly: place.readOnly };
    const launched = await launcher.launch({ command, cwd: place.cwd, env: place.env, stdin: '', confinement });
    if ('error' in launched) {
      failedAt.set(versionId, Date.now());
      logger.warn({ versionId, reason: launched.error }, 'the fork server of a Python version could not start');
      return;
    }
    server.process = launched;
    if (stopping || servers.get(versionId) !== server) void launched.endGroup(options.killGraceMs);
    await followOutput(versionId, server, launched);
  }

  async function followOutput(versionId: string, server: ForkServer, launched: LaunchedProcess): Promise<void> {
    logLines(launched.stdout, (line) => logger.info({ versionId, forkServer: line }, 'fork server output'));
    logLines(launched.stderr, (line) => logger.warn({ versionId, forkServer: line }, 'fork server output'));
    const status = await launched.exit;
    // A server retired or stopped by crewd did not fail; one that ended by itself other than idle did. One that never
    // listened is not started again for a while (a crew that crashes its import); one killed while serving is.
    const failed = status?.code !== 0 && !stopping && servers.get(versionId) === server;
    if (failed && !existsSync(server.socket)) failedAt.set(versionId, Date.now());
    logger[failed ? 'warn' : 'info']({ versionId, ...status }, 'the fork server of a Python version exited');
  }

  function start(versionId: string, key: string, entry: [string, string], place: ServerPlace): ForkServer {
    const folder = socketFolder(versionId);
    const socket = path.join(folder, `socket-${++count}`);
    const server: ForkServer = { key, folder, socket, process: null, exited: Promise.resolve() };
    const idle = String(options.idleSeconds);
    const command = ['python', '-m', 'crewd_runner.forkserver', ...entry, '--socket', socket, '--idle-exit', idle];
    server.exited = serve(versionId, server, command, place)
      .catch((error: unknown) => logger.error({ err: error, versionId }, 'the fork server failed'))
      .finally(() => {
        live.delete(server);
        if (servers.get(versionId) === server) servers.delete(versionId);
        rmSync(socket, { force: true });
      });
    servers.set(versionId, server);
    live.add(server);
    logger.info({ versionId }, 'starting the fork server of a Python version');
    return server;
  }

  /** Its socket goes, so no run reaches it any more; it ends once its last run ended. */
  function retire(versionId: string, server: ForkServer): void {
    servers.delete(versionId);
    // One still importing has no run yet: it goes now (one still launching goes once launched).
    if (server.process && !existsSync(server.socket)) void server.process.endGroup(options.killGraceMs);
    rmSync(server.socket, { force: true });
  }

  return {
    /**
     * How a run of the version starts through its fork server (started now when none runs), or
     * null when the version is not a Python crew the server can run, or has no server for now.
     */
    forkedRun(versionId: string, command: readonly string[], place: ServerPlace): ForkedRun | null {
      const entry = pythonRunnerEntry(command);
      if (stopping || options.idleSeconds <= 0 || !entry) return null;
      if (Date.now() - (failedAt.get(versionId) ?? 0) < RETRY_AFTER_FAILURE_MS) return null;
      const key = createHash('sha256')
        .update(JSON.stringify([command, place]))
        .digest('hex');
      let server = servers.get(versionId);
      if (server && server.key !== key) retire(versionId, server);
      if (!server || server.key !== key) server = start(versionId, key, entry, place);
      return { forkSocket: server.socket };
    },

    /** The version was deleted: its server ends with its last run. */
    forget(versionId: string): void {
      const server = servers.get(versionId);
      if (server) retire(versionId, server);
    },

    /** Stops every server (after the runs: a server's children are runs) and removes the socket folders. */
    async stop(): Promise<void> {
      stopping = true;
      const all = [...live];
      for (const server of all) void server.process?.endGroup(options.killGraceMs);
      await Promise.all(all.map((server) => server.exited));
      if (root) rmSync(root, { recursive: true, force: true });
    },
  };
}

export type ForkServers = ReturnType<typeof createForkServers>;
