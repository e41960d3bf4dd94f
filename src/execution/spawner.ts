import { type ChildProcess, spawn } from 'node:child_process';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { ExitStatus, LaunchedProcess, LaunchRequest, ProcessLauncher } from './launcher.js';
import { terminateGroup } from './process-group.js';

/** The helper's source: a real file next to this one (copied beside the compiled one by the build). */
const HELPER_PATH = fileURLToPath(new URL('./spawner-helper.cjs', import.meta.url));

/** How long the helper has to end its runners and exit once told to. */
const HELPER_EXIT_GRACE_MS = 5000;

/** A runner the helper was asked to start: until it started, then until its output and exit are all in. */
interface Pending {
  /** The helper that starts it: standard input sent later goes to the same one. */
  via: ChildProcess;
  resolveStart(result: LaunchedProcess | { error: string }): void;
  output?: { stdout: Readable; stderr: Readable };
  resolveExit?(status: ExitStatus | null): void;
  /** What is still to come of it: its exit and the end of each of its two streams. */
  awaited: number;
}

type HelperMessage =
  | { op: 'failed'; id: number; error: string }
  | { op: 'started'; id: number; pid: number }
  | { op: 'out'; id: number; stream: 'stdout' | 'stderr'; data: string }
  | { op: 'end'; id: number; stream: 'stdout' | 'stderr' }
  | { op: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null };

/** A stream the helper's relayed chunks are pushed into; it has nothing to pull. */
const relayedStream = () => new Readable({ read() {} });

/**
 * The plain launcher. Forking copies the forking process's page tables and leaves all its memory
 * copy-on-write until the child execs: in a service with a few hundred MB mapped, that costs
 * milliseconds of blocked event loop on every spawn. So a small helper process (spawner-helper.cjs)
 * forks instead and relays the runner's stdout and stderr over IPC; it also kills every runner
 * when the service dies, even by SIGKILL.
 */
export function createSpawner(logger: Logger): ProcessLauncher {
  let helper: ChildProcess | null = null;
  let nextId = 1;
  let closing = false;
  const pending = new Map<number, Pending>();

  function settled(id: number, entry: Pending): void {
    entry.awaited -= 1;
    if (entry.awaited === 0) pending.delete(id);
  }

  function onStarted(id: number, entry: Pending, pid: number): void {
    const output = { stdout: relayedStream(), stderr: relayedStream() };
    const exit = new Promise<ExitStatus | null>((resolve) => {
      entry.resolveExit = resolve;
    });
    entry.output = output;
    const sendStdin = (data: string, keepOpen?: boolean) => {
      if (entry.via.connected) entry.via.send({ op: 'stdin', id, data, keepOpen: keepOpen === true });
    };
    const answer = (line: string) => {
      if (entry.via.connected) entry.via.send({ op: 'write', id, data: `${line}\n` });
    };
    const endGroup = (graceMs: number) => terminateGroup(pid, graceMs);
    entry.resolveStart({ pid, ...output, sendStdin, answer, exit, endGroup });
  }

  function onMessage(message: HelperMessage): void {
    const entry = pending.get(message.id);
    if (!entry) return;
    switch (message.op) {
      case 'failed':
        pending.delete(message.id);
        entry.resolveStart({ error: message.error });
        return;
      case 'started':
        onStarted(message.id, entry, message.pid);
        return;
      case 'out':
        entry.output?.[message.stream].push(Buffer.from(message.data, 'latin1'));
        return;
      case 'end':
        entry.output?.[message.stream].push(null);
        settled(message.id, entry);
        return;
      case 'exit':
        entry.resolveExit?.({ code: message.code, signal: message.signal });
        settled(message.id, entry);
        return;
    }
  }

  function ensureHelper(): ChildProcess {
    if (helper?.connected) return helper;
    const started = spawn(process.execPath, [HELPER_PATH], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      env: {},
      // A group of its own: Ctrl-C in crewd's terminal is crewd's to handle (it stops the runs, then the helper); the
      // helper still ends when crewd does, by the IPC channel closing.
      detached: true,
      serialization: 'json',
    });
    started.on('message', (message) => onMessage(message as HelperMessage));
    started.once('exit', (code, signal) => {
      if (helper === started) helper = null;
      if (!closing) logger.error({ code, signal }, 'runner spawner exited; it restarts with the next run');
      // Runs it was starting never start; runs it started go on, but their exit status is lost.
      for (const [id, entry] of pending) {
        pending.delete(id);
        if (!entry.output) {
          entry.resolveStart({ error: 'the runner spawner stopped' });
          continue;
        }
        entry.resolveExit?.(null);
        entry.output.stdout.push(null);
        entry.output.stderr.push(null);
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
        const unavailable = (error: Error) => {
          pending.delete(id);
          resolveStart({ error: `the runner spawner is unavailable: ${error.message}` });
        };
        const { cwd, env, stdin } = request;
        const message = { op: 'spawn', id, file, args, cwd, env, stdin, keepOpen: request.keepStdinOpen === true };
        try {
          const via = ensureHelper();
          pending.set(id, { via, resolveStart, awaited: 3 });
          via.send(message, (error: Error | null) => {
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
      if (!current || current.exitCode !== null || current.signalCode !== null) return;
      const exited = new Promise((resolve) => current.once('exit', resolve));
      if (current.connected) current.disconnect();
      // The helper ends its runners and exits as the channel closes; should it not, it is ended here.
      const stuck = setTimeout(() => {
        logger.error({ pid: current.pid }, 'the runner spawner did not exit when asked; killed');
        current.kill('SIGKILL');
      }, HELPER_EXIT_GRACE_MS);
      await exited;
      clearTimeout(stuck);
    },
  };
}
