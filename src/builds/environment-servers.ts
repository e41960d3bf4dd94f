import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import { type ForkServerAddress, movedPaths } from '../execution/fork-server-launcher.js';
import type { LaunchedProcess, ProcessLauncher } from '../execution/launcher.js';
import { ServerStart } from '../execution/server-start.js';
import { SANDBOX_HOME, SANDBOX_TMP } from '../sandbox/home.js';
import { secretMasker } from '../secret-mask.js';
import { untilSocketFile } from './socket-file.js';

/** A version's environment as its environment server is started with: never a deployment's variables. */
export interface EnvironmentPlace {
  /** The built environment's folder (per organization: builds/environment-cache.ts). */
  folder: string;
  /** The environment's variables only: its bin on PATH, crewd's settings. */
  env: Record<string, string>;
  /** What the server reads besides its portal: the environment, crewd's Python runner. */
  readOnly: string[];
}

/** What a run of a version served by an environment's version server starts with. */
export interface EnvironmentRun {
  /** Its `moved` says where the version server sees the version's files: in the environment's portal. */
  forkSocket: ForkServerAddress;
}

interface VersionServer {
  key: string;
  /** Its `start` says once it listens: a listening server whose socket went has ended (idle, or crashed). */
  address: ForkServerAddress & { start: ServerStart };
  /** Its built files in the portal (hard links), and its socket's folder. */
  files: string;
  sockets: string;
}

interface EnvironmentServer {
  key: string;
  folder: string;
  sockets: string;
  portal: string;
  address: ForkServerAddress;
  process: LaunchedProcess | null;
  exited: Promise<void>;
  versions: Map<string, VersionServer>;
  /** The secrets of every version it served: its output (the versions' imports') is logged with them masked. */
  secrets: Set<string>;
  count: number;
  ended: boolean;
}

export interface EnvironmentServersOptions {
  launcher: ProcessLauncher;
  logger: Logger;
  idleSeconds: number;
  killGraceMs: number;
}

/** The folders each version server gets anew inside its environment's sandbox (versionview.py). */
const PRIVATE_FOLDERS = [SANDBOX_TMP, SANDBOX_HOME, '/dev/shm'];
/** How often crewd looks whether a starting environment server listens yet. */
const LISTEN_POLL_MS = 100;
const RETRY_AFTER_FAILURE_MS = 30_000;

const hashOf = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

/** `from`'s files, hard-linked (copied across file systems) into the new folder `to`. */
export function linkTree(from: string, to: string): void {
  mkdirSync(to, { recursive: true, mode: 0o755 });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) linkTree(source, target);
    else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else if (entry.isFile()) {
      try {
        linkSync(source, target);
      } catch {
        copyFileSync(source, target);
      }
    }
  }
}

/**
 * Environment servers (docs/ARCHITECTURE.md, "Memory per deployment"): one per environment folder and framework,
 * in a sandbox of its own, that imports the framework once and forks a version server per version
 * (runners/python/crewd_runner/envserver.py). A version's files are hard-linked into the environment's portal; its
 * version server sees them and nothing of the other versions'. The environment server gets the environment's
 * variables only; each version server's secret and variables go to the version server alone.
 */
export function createEnvironmentServers(options: EnvironmentServersOptions) {
  const { launcher, logger } = options;
  const servers = new Map<string, EnvironmentServer>();
  /** Which environment server serves each version now. */
  const served = new Map<string, EnvironmentServer>();
  const failedAt = new Map<string, number>();
  let count = 0;
  let stopping = false;

  function start(key: string, kind: string, environment: EnvironmentPlace, within: string): EnvironmentServer {
    const folder = path.join(within, `e${++count}`);
    const sockets = path.join(folder, 's');
    const portal = path.join(folder, 'v');
    mkdirSync(sockets, { recursive: true, mode: 0o700 });
    mkdirSync(portal, { mode: 0o755 });
    const address = { path: path.join(sockets, 'e'), secret: randomBytes(32).toString('hex') };
    const server: EnvironmentServer = {
      ...{ key, folder, sockets, portal, address, process: null, exited: Promise.resolve() },
      ...{ versions: new Map(), secrets: new Set<string>(), count: 0, ended: false },
    };
    // `--name=path` where the path is not in the sandbox's view as such (the sandbox checks the paths named alone).
    const command = ['python', '-m', 'crewd_runner.envserver', '--kind', kind, `--folder=${folder}`];
    command.push('--socket', address.path, '--idle-exit', String(options.idleSeconds));
    for (const folder of PRIVATE_FOLDERS) command.push(`--private=${folder}`);
    server.exited = serve(server, command, environment)
      .catch((error: unknown) => logger.error({ err: error }, 'the environment server failed'))
      .finally(() => {
        server.ended = true;
        if (servers.get(key) === server) servers.delete(key);
        for (const [versionId, version] of server.versions) {
          version.address.start.gone();
          if (served.get(versionId) === server) served.delete(versionId);
        }
        rmSync(folder, { recursive: true, force: true });
      });
    servers.set(key, server);
    logger.info({ environment: environment.folder }, 'starting the environment server of a Python environment');
    return server;
  }

  async function serve(server: EnvironmentServer, command: string[], environment: EnvironmentPlace): Promise<void> {
    const confinement = {
      writable: [server.sockets],
      readOnly: [...environment.readOnly, server.portal],
      notRoot: true,
    };
    const stdin = `${server.address.secret}\n`;
    const launched = await launcher.launch({ command, cwd: server.portal, env: environment.env, stdin, confinement });
    if ('error' in launched) {
      logger.warn({ reason: launched.error }, 'the environment server of a Python environment could not start');
      return;
    }
    server.process = launched;
    if (stopping) void launched.endGroup(options.killGraceMs);
    launched.stdout.resume();
    launched.stderr.on('data', (chunk: Buffer) => {
      const mask = secretMasker(server.secrets);
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() !== '')
          logger.warn({ environmentServer: mask(line).slice(0, 4096) }, 'environment server output');
      }
    });
    const status = await launched.exit;
    logger.info({ ...status }, 'the environment server of a Python environment exited');
  }

  /** Waits for the environment server to listen, asks it for the version's server, notes when that listens. */
  async function ask(
    server: EnvironmentServer,
    versionId: string,
    version: VersionServer,
    env: Record<string, string>,
    entry: string[],
  ): Promise<void> {
    const stillWanted = () => !server.ended && !stopping && server.versions.get(versionId) === version;
    if (!(await untilSocketFile(server.address.path, stillWanted, LISTEN_POLL_MS))) return version.address.start.gone();
    const answer = await new Promise<string>((resolve) => {
      const socket = net.createConnection(server.address.path);
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('utf8');
      });
      socket.once('error', () => resolve(received));
      socket.once('close', () => resolve(received));
      const request = {
        secret: server.address.secret,
        entry,
        folder: version.files,
        socket: version.address.path,
      };
      const own = { secret: version.address.secret, env };
      socket.end(`${JSON.stringify(request)}\n${JSON.stringify(own)}\n`);
    });
    if (answer === '{"listening": true}\n') {
      version.address.start.listening();
      return;
    }
    version.address.start.gone();
    if (server.versions.get(versionId) === version) {
      failedAt.set(versionId, Date.now());
      retire(server, versionId);
    }
    const masked = secretMasker(server.secrets)(answer).slice(0, 4096);
    logger.warn({ versionId, answer: masked }, 'the version server of a Python version did not start');
  }

  /**
   * Its socket goes, so no run reaches it any more: it ends once its last run ended (forkserver.py). Its files stay
   * while runs may read them, until the environment server ends, or go now when the version was deleted.
   */
  function retire(server: EnvironmentServer, versionId: string, deleted = false): void {
    const version = server.versions.get(versionId);
    if (!version) return;
    version.address.start.gone();
    server.versions.delete(versionId);
    if (served.get(versionId) === server) served.delete(versionId);
    rmSync(version.address.path, { force: true });
    if (deleted) rmSync(version.files, { recursive: true, force: true });
  }

  return {
    /**
     * How a run of the version starts through its environment's version server (both started now when missing),
     * or null for now (a version server that failed to start, a while ago).
     */
    forkedRun(
      versionId: string,
      entry: [string, string],
      place: { cwd: string; env: Record<string, string>; secrets: string[] },
      environment: EnvironmentPlace,
      within: string,
    ): EnvironmentRun | null {
      if (stopping || Date.now() - (failedAt.get(versionId) ?? 0) < RETRY_AFTER_FAILURE_MS) return null;
      const kind = entry[0] === '--graph' ? 'graph' : 'crew';
      const key = hashOf([environment, kind]);
      let server = servers.get(key);
      const previous = served.get(versionId);
      if (previous && previous !== server) retire(previous, versionId);
      if (!server || server.ended) server = start(key, kind, environment, within);
      const versionKey = hashOf([entry, place]);
      let version = server.versions.get(versionId);
      const gone = version?.address.start.listens === true && !existsSync(version.address.path);
      if (version && (version.key !== versionKey || gone)) {
        retire(server, versionId);
        version = undefined;
      }
      if (!version) {
        const number = ++server.count;
        const sockets = path.join(server.sockets, String(number));
        mkdirSync(sockets, { mode: 0o700 });
        const files = path.join(server.portal, String(number));
        linkTree(place.cwd, files);
        const address = {
          ...{ path: path.join(sockets, 's'), secret: randomBytes(32).toString('hex') },
          start: new ServerStart(),
        };
        version = { key: versionKey, address, files, sockets };
        server.versions.set(versionId, version);
        served.set(versionId, server);
        for (const secret of place.secrets) server.secrets.add(secret);
        const env = { ...place.env };
        if (env.PYTHONPATH !== undefined) env.PYTHONPATH = movedPaths(env.PYTHONPATH, place.cwd, files);
        void ask(server, versionId, version, env, entry);
      }
      return { forkSocket: { ...version.address, moved: { from: place.cwd, to: version.files } } };
    },

    /** The version was deleted: its version server ends with its last run, and its files leave the portal. */
    forget(versionId: string): void {
      const server = served.get(versionId);
      if (server) retire(server, versionId, true);
    },

    /** Stops every environment server, their version servers with them (they are in its sandbox). */
    async stop(): Promise<void> {
      stopping = true;
      const all = [...servers.values()];
      for (const server of all) void server.process?.endGroup(options.killGraceMs);
      await Promise.all(all.map((server) => server.exited));
    },
  };
}

export type EnvironmentServers = ReturnType<typeof createEnvironmentServers>;
