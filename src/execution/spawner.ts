import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { ExitStatus, LaunchedProcess, LaunchRequest, ProcessLauncher } from './launcher.js';

/** The helper's source: a real file next to this one (copied beside the compiled one by the build). */
const HELPER_PATH = fileURLToPath(new URL('./spawner-helper.cjs', import.meta.url));

interface Pending {
  resolveStart(result: LaunchedProcess | { error: string }): void;
  pid?: number;
  stdout?: Socket;
  resolveExit?(status: ExitStatus | null): void;
}

type HelperMessage =
  | { op: 'failed'; id: number; error: string; fatal?: boolean }
  | { op: 'stdout'; id: number; pid: number }
  | { op: 'stderr'; id: number }
  | { op: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null };

/**
 * The plain launcher. Forking copies the forking process's page tables and leaves all its memory
 * copy-on-write until the child execs: in a service with a few hundred MB mapped, that costs
 * milliseconds of blocked event loop on every spawn. So a small helper process (spawner-helper.cjs)
 * forks instead and hands the runner's stdout and stderr pipes over IPC; it also kills every
 * runner when the service dies, even by SIGKILL.
 */
export function createSpawner(logger: Logger): ProcessLauncher {
  let helper: ChildProcess | null = null;
  let nextId = 1;
  let closing = false;
  const pending = new Map<number, Pending>();

  function onMessage(message: HelperMessage, handle: unknown): void {
    const entry = pending.get(message.id);
    if (!entry) return;
    switch (message.op) {
      case 'failed':
        pending.delete(message.id);
        if (message.fatal) logger.error({ reason: message.error }, 'the runner spawner cannot start runners');
        entry.resolveStart({ error: message.error });
        return;
      case 'stdout':
        entry.pid = message.pid;
        entry.stdout = handle as Socket;
        return;
      case 'stderr': {
        let resolveExit!: Pending['resolveExit'];
        const exit = new Promise<ExitStatus | null>((resolve) => {
          resolveExit = resolve;
        });
        entry.resolveExit = resolveExit;
        entry.resolveStart({
          pid: entry.pid as number,
          stdout: entry.stdout as Socket,
          stderr: handle as Socket,
          exit,
        });
        return;
      }
      case 'exit':
        pending.delete(message.id);
        entry.resolveExit?.({ code: message.code, signal: message.signal });
        return;
    }
  }

  function ensureHelper(): ChildProcess {
    if (helper?.connected) return helper;
    const started = spawn(process.execPath, [HELPER_PATH], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      env: {},
      serialization: 'json',
    });
    started.on('message', (message, handle) => onMessage(message as HelperMessage, handle));
    started.once('exit', (code, signal) => {
      if (helper === started) helper = null;
      if (!closing) logger.error({ code, signal }, 'runner spawner exited; it restarts with the next run');
      // Runs it was starting never start; runs it started go on, but their exit status is lost.
      for (const [id, entry] of pending) {
        pending.delete(id);
        if (entry.resolveExit) entry.resolveExit(null);
        else entry.resolveStart({ error: 'the runner spawner stopped' });
      }
    });
    started.on('error', (error) => logger.error({ err: error }, 'runner spawner failed'));
    helper = started;
    return started;
  }

  return {
    /** Starts the helper ahead of the first run. */
    start(): void {
      ensureHelper();
    },

    launch(request: LaunchRequest): Promise<LaunchedProcess | { error: string }> {
      const [file, ...args] = request.command;
      if (file === undefined) return Promise.resolve({ error: 'the command is empty' });
      // A helper started now would outlive stop() and keep the process from exiting.
      if (closing) return Promise.resolve({ error: 'crewd is stopping' });
      return new Promise((resolveStart) => {
        const id = nextId++;
        pending.set(id, { resolveStart });
        const unavailable = (error: Error) => {
          pending.delete(id);
          resolveStart({ error: `the runner spawner is unavailable: ${error.message}` });
        };
        const message = { id, file, args, cwd: request.cwd, env: request.env, stdin: request.stdin };
        try {
          ensureHelper().send(message, (error: Error | null) => {
            if (error) unavailable(error);
          });
        } catch (error) {
          // ERR_IPC_CHANNEL_CLOSED: the helper went between the check and the send.
          unavailable(error as Error);
        }
      });
    },

    async stop(): Promise<void> {
      closing = true;
      const current = helper;
      helper = null;
      if (!current || current.exitCode !== null) return;
      const exited = new Promise((resolve) => current.once('exit', resolve));
      current.disconnect();
      await exited;
    },
  };
}
