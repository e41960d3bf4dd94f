// @ts-check
'use strict';
/**
 * The runner spawner's helper process (see spawner.ts for why it exists). Plain CommonJS, run by
 * Node with no loader: it forks runners on request and relays their stdout and stderr to the
 * service over IPC. When the service goes (killed with -9, or stopping), every runner it started
 * goes too.
 *
 * It relays bytes rather than handing the pipes themselves over (`send(message, handle)`): under
 * load Node sometimes left a handed-over pipe unread in the service, and a helper waiting for that
 * handle's acknowledgement never heard the service disconnect (so neither it nor the runner ended).
 */
const { spawn } = require('node:child_process');
const { closeSync, readdirSync, readFileSync } = require('node:fs');

/** O_CLOEXEC as /proc/<pid>/fdinfo shows it (octal flags). */
const O_CLOEXEC = 0o2000000;

/**
 * Closes the descriptors this process inherited that would pass on to every runner: those left
 * open across exec by what started crewd (a shell's, a supervisor's pipe). Node opens its own with
 * close-on-exec, so every descriptor above 2 without it, but the service's channel, is one of those.
 */
function closeInheritedDescriptors() {
  /** @type {string[]} */
  let names;
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return; // no /proc: not Linux, nothing to look at
  }
  const channel = /** @type {{ fd?: number } | undefined} */ (process.channel)?.fd;
  for (const name of names) {
    const fd = Number(name);
    if (fd <= 2 || fd === channel) continue;
    try {
      const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
      if (flags?.[1] !== undefined && (Number.parseInt(flags[1], 8) & O_CLOEXEC) === 0) closeSync(fd);
    } catch {
      // gone meanwhile (the listing's own folder)
    }
  }
}
closeInheritedDescriptors();

/**
 * @typedef {{ op: 'spawn', id: number, file: string, args: string[], cwd: string, env: Record<string, string>, stdin: string | null, keepOpen?: boolean }} SpawnMessage
 * @typedef {{ op: 'stdin', id: number, data: string, keepOpen?: boolean }} StdinMessage
 * @typedef {{ op: 'write', id: number, data: string }} WriteMessage
 */

/** Relayed chunks whose write to the service is not done yet, past which the runners' pipes pause. */
const MAX_IN_FLIGHT = 64;

/** Process group ids of runners still running. */
/** @type {Set<number>} */
const live = new Set();
/** @type {Set<import('node:stream').Readable>} */
const paused = new Set();
let inFlight = 0;

/**
 * A runner can exit after the service closed the channel and before 'disconnect' is emitted here:
 * that message has no one to go to, and must not crash the helper before it kills the runners left.
 * @param {object} message @param {(() => void)} [done]
 */
function send(message, done) {
  if (!process.send || !process.connected) return;
  process.send(message, undefined, undefined, () => done?.());
}

/**
 * Sends each chunk as it comes, bytes kept as latin1 text (one character per byte); pauses the
 * pipe while the service is behind, so a runner writing without end cannot fill this process.
 * @param {number} id @param {'stdout' | 'stderr'} stream @param {import('node:stream').Readable} pipe
 */
function relay(id, stream, pipe) {
  pipe.on('data', (/** @type {Buffer} */ chunk) => {
    inFlight += 1;
    send({ op: 'out', id, stream, data: chunk.toString('latin1') }, () => {
      inFlight -= 1;
      if (inFlight < MAX_IN_FLIGHT / 2) resumeAll();
    });
    if (inFlight >= MAX_IN_FLIGHT) {
      pipe.pause();
      paused.add(pipe);
    }
  });
  pipe.once('end', () => send({ op: 'end', id, stream }));
  pipe.on('error', () => {});
}

function resumeAll() {
  for (const pipe of paused) pipe.resume();
  paused.clear();
}

process.on('disconnect', () => {
  for (const pid of live) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {}
  }
  process.exit(0);
});

/**
 * Standard input of runners started with `stdin: null`, by id, until it is sent; and of runners that keep it open
 * for answers to their calls (`keepOpen`), until they exit.
 */
/** @type {Map<number, import('node:stream').Writable>} */
const openStdin = new Map();

/**
 * @param {number} id
 * @param {string} data
 * @param {boolean | undefined} keepOpen
 */
function sendStdin(id, data, keepOpen) {
  const stdin = openStdin.get(id);
  if (!stdin) return;
  if (keepOpen) {
    stdin.write(data);
    return;
  }
  stdin.end(data);
  openStdin.delete(id);
}

process.on('message', (/** @type {SpawnMessage | StdinMessage | WriteMessage} */ m) => {
  if (m.op === 'stdin') sendStdin(m.id, m.data, m.keepOpen);
  else if (m.op === 'write') sendStdin(m.id, m.data, true);
  else start(m);
});

/** @param {SpawnMessage} m */
function start(m) {
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
  let started = false;
  child.once('error', (error) => {
    if (!started) send({ op: 'failed', id: m.id, error: error.message });
  });
  child.once('spawn', () => {
    const pid = /** @type {number} */ (child.pid);
    started = true;
    live.add(pid);
    child.stdin.on('error', () => {});
    openStdin.set(m.id, child.stdin);
    if (m.stdin !== null) sendStdin(m.id, m.stdin, m.keepOpen);
    send({ op: 'started', id: m.id, pid });
    relay(m.id, 'stdout', child.stdout);
    relay(m.id, 'stderr', child.stderr);
  });
  child.once('exit', (code, signal) => {
    if (child.pid !== undefined) live.delete(child.pid);
    openStdin.delete(m.id);
    if (started) send({ op: 'exit', id: m.id, code, signal });
  });
}
