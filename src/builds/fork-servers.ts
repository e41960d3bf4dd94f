import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { ForkServerAddress } from '../execution/fork-server-launcher.js';
import type { LaunchedProcess, ProcessLauncher } from '../execution/launcher.js';
import { LineSplitter } from '../execution/line-splitter.js';
import { ServerStart } from '../execution/server-start.js';
import { type VersionServerSetting, versionServerCommand } from '../execution/worker-command.js';
import { type SecretMask, secretMasker } from '../secret-mask.js';
import { createEnvironmentServers, type EnvironmentPlace } from './environment-servers.js';
import { untilSocketFile } from './socket-file.js';

/** Where and how a version's runs start: its built files as cwd, its env, what it may read. */
export interface ServerPlace {
  cwd: string;
  env: Record<string, string>;
  /** The values of its deployment variables and env: masked in what crewd logs of the server's output. */
  secrets: string[];
  readOnly: string[];
  /** Its built environment, where it has one: its versions can share an environment server. */
  environment?: EnvironmentPlace | undefined;
}

/** A run of a version through its fork server: the socket crewd asks it on (src/execution/fork-server-launcher.ts). */
export interface ForkedRun {
  forkSocket: ForkServerAddress;
}

export interface ForkServersOptions {
  launcher: ProcessLauncher;
  logger: Logger;
  /** crewd's data folder: every sandbox hides it, so the servers' sockets live in there. */
  dataDir: string;
  /** A server with no run for this long exits (started again by the next run); 0 turns fork servers off. */
  idleSeconds: number;
  killGraceMs: number;
  /** RUN_ISOLATION=deployment starts a worker per version instead of a fork server (execution/worker-command.ts). */
  isolation?: VersionServerSetting;
  /**
   * Versions with a built environment get a version server forked from their environment's server
   * (environment-servers.ts) instead of a fork server of their own: in the bubblewrap sandbox, under RUN_ISOLATION=run.
   */
  environmentServers?: boolean;
}

interface ForkServer {
  /** What the server was started with: a version whose variables changed needs a new one. */
  key: string;
  folder: string;
  address: ForkServerAddress & { start: ServerStart };
  /** Its process once launched: its group is ended to stop it. */
  process: LaunchedProcess | null;
  exited: Promise<void>;
}

/** After a server failed before it listened, its version runs without one this long, not a failing server per run. */
const RETRY_AFTER_FAILURE_MS = 30_000;
const MAX_LOG_LINE_BYTES = 16 * 1024;
/** How often a starting server's socket is looked for: its runs wait for it (execution/server-start.ts). */
const LISTEN_POLL_MS = 50;
/** A Unix socket's path holds at most 107 bytes and a NUL. */
const MAX_SOCKET_PATH_BYTES = 107;
/** What a server's folder and socket add to the root's path: `/e<n>/s/<m>/s` at most, with room for the counts. */
const SERVER_PATH_BYTES = 24;

/** `python -m crewd_runner --crew|--flow|--graph TARGET`, as project detection makes it (src/builds/project.ts). */
export function pythonRunnerEntry(command: readonly string[]): [string, string] | null {
  const [program, flag, module, kind, target, ...rest] = command;
  if (program !== 'python' || flag !== '-m' || module !== 'crewd_runner' || rest.length > 0) return null;
  if (kind !== '--crew' && kind !== '--flow' && kind !== '--graph') return null;
  return target ? [kind, target] : null;
}

function logLines(stream: Readable, mask: SecretMask, log: (line: string) => void): void {
  const lines = new LineSplitter(MAX_LOG_LINE_BYTES, MAX_LOG_LINE_BYTES, {
    line: (text) => {
      if (text.trim() !== '') log(mask(text));
    },
    longLine: (line) => log(`${mask(line.head, true)}… (${line.bytes} bytes)`),
  });
  stream.on('data', (chunk: Buffer) => lines.push(chunk));
  stream.once('end', () => lines.end());
  stream.on('error', () => {});
}

/**
 * The Python fork servers of this instance (docs/python-crews.md): one per Python bundle version,
 * started at the version's first run here, in a sandbox of its own with the version's built files
 * and its socket folder, and nothing else of DATA_DIR. The runs stay processes of their own: crewd
 * asks the server for each on its socket, with the server's secret, and starts the version's
 * command as ever when none listens. No runner sees a socket: they lie in DATA_DIR.
 */
export function createForkServers(options: ForkServersOptions) {
  const { launcher, logger } = options;
  /** The current server of each version. */
  const servers = new Map<string, ForkServer>();
  /** Current and retired servers still running. */
  const live = new Set<ForkServer>();
  const failedAt = new Map<string, number>();
  let root: string | null | undefined;
  let count = 0;
  let stopping = false;
  const environments = createEnvironmentServers(options);
  const sharing = options.environmentServers === true && options.isolation?.isolation !== 'deployment';

  /**
   * The folder of this crewd's server sockets, `DATA_DIR/f/<random>` (0700): every sandbox hides DATA_DIR, and each
   * server's sandbox gets only its own folder back. Null, with a warning once, when DATA_DIR's path leaves no room
   * in a socket path: runs then start without a server.
   */
  function socketRoot(): string | null {
    if (root !== undefined) return root;
    mkdirSync(options.dataDir, { recursive: true });
    const parent = path.join(realpathSync.native(options.dataDir), 'f');
    const length = Buffer.byteLength(parent) + '/XXXXXX'.length + SERVER_PATH_BYTES;
    if (length > MAX_SOCKET_PATH_BYTES) {
      logger.warn(
        { dataDir: options.dataDir, socketPathBytes: length, limit: MAX_SOCKET_PATH_BYTES },
        "DATA_DIR has too long a path for the Python fork servers' sockets: Python runs start without a fork " +
          'server; a DATA_DIR of a shorter path turns them on',
      );
      root = null;
      return root;
    }
    mkdirSync(parent, { recursive: true, mode: 0o700 });
    root = mkdtempSync(`${parent}/`);
    return root;
  }

  async function serve(versionId: string, server: ForkServer, command: string[], place: ServerPlace): Promise<void> {
    const confinement = { writable: [server.folder], readOnly: place.readOnly };
    // The secret goes on standard input: a server's argv and environment can be read by others.
    const stdin = `${server.address.secret}\n`;
    const launched = await launcher.launch({ command, cwd: place.cwd, env: place.env, stdin, confinement });
    if ('error' in launched) {
      server.address.start.gone();
      failedAt.set(versionId, Date.now());
      logger.warn({ versionId, reason: launched.error }, 'the fork server of a Python version could not start');
      return;
    }
    server.process = launched;
    if (stopping || servers.get(versionId) !== server) void launched.endGroup(options.killGraceMs);
    void noteListening(server, launched);
    await followOutput(versionId, server, launched, secretMasker(place.secrets));
  }

  /** Tells the server's runs once its socket is there (it binds once it imported the crew), or that it ended first. */
  async function noteListening(server: ForkServer, launched: LaunchedProcess): Promise<void> {
    let exited = false;
    void launched.exit.finally(() => {
      exited = true;
    });
    const { start } = server.address;
    const stillStarting = () => start.starting && !exited;
    if (await untilSocketFile(server.address.path, stillStarting, LISTEN_POLL_MS)) start.listening();
    else start.gone();
  }

  async function followOutput(versionId: string, server: ForkServer, launched: LaunchedProcess, mask: SecretMask) {
    logLines(launched.stdout, mask, (line) => logger.info({ versionId, forkServer: line }, 'fork server output'));
    logLines(launched.stderr, mask, (line) => logger.warn({ versionId, forkServer: line }, 'fork server output'));
    const status = await launched.exit;
    // A server retired or stopped by crewd did not fail; one that ended by itself other than idle did. One that never
    // listened is not started again for a while (a crew that crashes its import); one killed while serving is.
    const failed = status?.code !== 0 && !stopping && servers.get(versionId) === server;
    if (failed && !existsSync(server.address.path)) failedAt.set(versionId, Date.now());
    logger[failed ? 'warn' : 'info']({ versionId, ...status }, 'the fork server of a Python version exited');
  }

  function start(versionId: string, key: string, entry: [string, string], place: ServerPlace, within: string) {
    const folder = path.join(within, String(++count));
    mkdirSync(folder, { mode: 0o700 });
    const socket = path.join(folder, 's');
    const address = { path: socket, secret: randomBytes(32).toString('hex'), start: new ServerStart() };
    const server: ForkServer = { key, folder, address, process: null, exited: Promise.resolve() };
    const command = versionServerCommand(entry, socket, options.idleSeconds, options.isolation);
    server.exited = serve(versionId, server, command, place)
      .catch((error: unknown) => logger.error({ err: error, versionId }, 'the fork server failed'))
      .finally(() => {
        server.address.start.gone();
        live.delete(server);
        if (servers.get(versionId) === server) servers.delete(versionId);
        rmSync(folder, { recursive: true, force: true });
      });
    servers.set(versionId, server);
    live.add(server);
    logger.info({ versionId }, 'starting the fork server of a Python version');
    return server;
  }

  /** Its socket goes, so no run reaches it any more; it ends once its last run ended. */
  function retire(versionId: string, server: ForkServer): void {
    servers.delete(versionId);
    server.address.start.gone();
    // One still importing has no run yet: it goes now (one still launching goes once launched).
    if (server.process && !existsSync(server.address.path)) void server.process.endGroup(options.killGraceMs);
    rmSync(server.address.path, { force: true });
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
      const within = socketRoot();
      if (within === null) return null;
      if (sharing && place.environment) {
        return environments.forkedRun(versionId, entry, place, place.environment, within);
      }
      const key = createHash('sha256')
        .update(JSON.stringify([command, place]))
        .digest('hex');
      let server = servers.get(versionId);
      if (server && server.key !== key) retire(versionId, server);
      if (!server || server.key !== key) server = start(versionId, key, entry, place, within);
      return { forkSocket: server.address };
    },

    /** The version was deleted: its server ends with its last run. */
    forget(versionId: string): void {
      const server = servers.get(versionId);
      if (server) retire(versionId, server);
      environments.forget(versionId);
    },

    /** Stops every server (after the runs: a server's children are runs) and removes the socket folders. */
    async stop(): Promise<void> {
      stopping = true;
      const all = [...live];
      for (const server of all) void server.process?.endGroup(options.killGraceMs);
      await Promise.all([...all.map((server) => server.exited), environments.stop()]);
      if (root) rmSync(root, { recursive: true, force: true });
    },
  };
}

export type ForkServers = ReturnType<typeof createForkServers>;
