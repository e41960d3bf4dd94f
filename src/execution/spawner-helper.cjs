// @ts-check
'use strict';
/**
 * The runner spawner's helper process (see spawner.ts for why it exists). Plain CommonJS, run by
 * Node with no loader: it forks runners on request and hands their stdout and stderr pipes back
 * over IPC. When the service goes (killed with -9, or stopping), every runner it started goes too.
 */
const { spawn } = require('node:child_process');

/** @typedef {{ id: number, file: string, args: string[], cwd: string, env: Record<string, string>, stdin: string }} SpawnMessage */

/** Process group ids of runners still running. */
/** @type {Set<number>} */
const live = new Set();

/**
 * A runner can exit after the service closed the channel and before 'disconnect' is emitted here:
 * that message has no one to go to, and must not crash the helper before it kills the runners left.
 * @param {object} message @param {any} [handle]
 */
function send(message, handle) {
  if (!process.send || !process.connected) return;
  process.send(message, handle, undefined, () => {});
}

/**
 * Node starts reading a child's pipes as soon as it makes them; stopping that before the event
 * loop turns keeps every byte in the pipe for the service, which reads them once the handles
 * arrive. `readStop` is Node's own, not public: if it is missing the pipes cannot be held, and
 * the spawn fails with that reason rather than losing a fast runner's first lines.
 * @param {import('node:stream').Readable | null} stream
 */
function holdPipe(stream) {
  const handle = /** @type {{ _handle?: { readStop?: () => number } } | null} */ (stream)?._handle;
  if (typeof handle?.readStop !== 'function') return false;
  handle.readStop();
  return true;
}

process.on('disconnect', () => {
  for (const pid of live) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {}
  }
  process.exit(0);
});

process.on('message', (/** @type {SpawnMessage} */ m) => {
  let child;
  try {
    child = spawn(m.file, m.args, {
      cwd: m.cwd,
      env: m.env,
      detached: true,
      shell: false,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  } catch (error) {
    send({ op: 'failed', id: m.id, error: String((error instanceof Error && error.message) || error) });
    return;
  }
  const held = holdPipe(child.stdout) && holdPipe(child.stderr);
  let started = false;
  child.once('error', (error) => {
    if (!started) send({ op: 'failed', id: m.id, error: error.message });
  });
  child.once('spawn', () => {
    const pid = /** @type {number} */ (child.pid);
    if (!held) {
      process.kill(-pid, 'SIGKILL');
      const error = `this Node ${process.version} cannot hold a child's pipes (no readStop)`;
      send({ op: 'failed', id: m.id, error, fatal: true });
      return;
    }
    started = true;
    live.add(pid);
    child.stdin.on('error', () => {});
    child.stdin.end(m.stdin);
    send({ op: 'stdout', id: m.id, pid }, child.stdout);
    send({ op: 'stderr', id: m.id }, child.stderr);
  });
  child.once('exit', (code, signal) => {
    if (child.pid !== undefined) live.delete(child.pid);
    if (started) send({ op: 'exit', id: m.id, code, signal });
  });
});
