import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';

/**
 * The helper that forks runners. Forking copies the forking process's page tables and leaves
 * all its memory copy-on-write until the child execs: in a service with a few hundred MB
 * mapped, that costs milliseconds of blocked event loop and page faults on every spawn. A small
 * helper process forks instead and hands the runner's stdout and stderr pipes over IPC, so the
 * service reads them as if it had spawned the runner itself. Plain CommonJS run with `node -e`:
 * no loader, no dependencies, nothing of the service's environment.
 */
const HELPER_SOURCE = `
'use strict';
const { spawn } = require('node:child_process');
const live = new Set();
// The service is gone (killed with -9, or stopping): no runner may outlive it.
process.on('disconnect', () => {
  for (const pid of live) {
    try { process.kill(-pid, 'SIGKILL'); } catch {}
  }
  process.exit(0);
});
process.on('message', (m) => {
  let child;
  try {
    child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, detached: true, shell: false, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (error) {
    process.send({ op: 'failed', id: m.id, error: String(error && error.message || error) });
    return;
  }
  // Node starts reading a child's pipes as soon as it makes them; stop that before the event loop
  // turns, so every byte stays in the pipe for the service, which reads them once the handles arrive.
  for (const stream of [child.stdout, child.stderr]) {
    if (stream && stream._handle && typeof stream._handle.readStop === 'function') stream._handle.readStop();
  }
  let started = false;
  child.once('error', (error) => {
    if (!started) process.send({ op: 'failed', id: m.id, error: error.message });
  });
  child.once('spawn', () => {
    started = true;
    live.add(child.pid);
    child.stdin.on('error', () => {});
    child.stdin.end(m.stdin);
    process.send({ op: 'stdout', id: m.id, pid: child.pid }, child.stdout);
    process.send({ op: 'stderr', id: m.id }, child.stderr);
  });
  child.once('exit', (code, signal) => {
    live.delete(child.pid);
    if (started) process.send({ op: 'exit', id: m.id, code, signal });
  });
});
`;

export interface SpawnRequest {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  stdin: string;
}

export interface SpawnedProcess {
  pid: number;
  stdout: Socket;
  stderr: Socket;
  /** The exit status, or null when the helper died and took it along. */
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null } | null>;
}

interface Pending {
  resolveStart(result: SpawnedProcess | { error: string }): void;
  pid?: number;
  stdout?: Socket;
  resolveExit?(status: { code: number | null; signal: NodeJS.Signals | null } | null): void;
}

type HelperMessage =
  | { op: 'failed'; id: number; error: string }
  | { op: 'stdout'; id: number; pid: number }
  | { op: 'stderr'; id: number }
  | { op: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null };

export function createSpawner(logger: Logger) {
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
        entry.resolveStart({ error: message.error });
        return;
      case 'stdout':
        entry.pid = message.pid;
        entry.stdout = handle as Socket;
        return;
      case 'stderr': {
        let resolveExit!: Pending['resolveExit'];
        const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null } | null>((resolve) => {
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
    const started = spawn(process.execPath, ['-e', HELPER_SOURCE], {
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

    spawn(request: SpawnRequest): Promise<SpawnedProcess | { error: string }> {
      return new Promise((resolveStart) => {
        const id = nextId++;
        pending.set(id, { resolveStart });
        const target = ensureHelper();
        target.send({ id, ...request }, (error: Error | null) => {
          if (!error) return;
          pending.delete(id);
          resolveStart({ error: `the runner spawner is unavailable: ${error.message}` });
        });
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

export type Spawner = ReturnType<typeof createSpawner>;
