import type { FastifyReply } from 'fastify';
import type { LiveEvent } from '../events/types.js';
import { MAX_CLIENT_BACKLOG_BYTES, type StreamSink } from './stream.js';

/** How long a closing stream waits for a lagging client to take its last messages. */
const CLOSE_GRACE_MS = 10_000;

/**
 * The SSE frame of an event, encoded once and shared by every client of the run: with a
 * thousand clients, one event costs one encoding and a thousand zero-copy socket writes.
 */
function frameOf(event: LiveEvent): Buffer {
  event.frame ??= Buffer.from(`id: ${event.seq}\ndata: ${event.json}\n\n`);
  return event.frame;
}

export interface SseSink extends StreamSink {
  /** Resolves once the response is over: ended after its last message, dropped, or closed by the client. */
  readonly ended: Promise<void>;
}

/**
 * One client's end of an event stream. @fastify/sse negotiates the route, sends the headers and
 * reports the connection's end; the frames themselves are written here, never waiting on the
 * client: at once while the socket takes them, queued while it does not, and a client whose
 * backlog passes MAX_CLIENT_BACKLOG_BYTES is disconnected (it can resume with Last-Event-ID), so a
 * slow reader costs bounded memory and never holds up the run or the other readers.
 */
export function createSseSink(reply: FastifyReply, maxBacklogBytes = MAX_CLIENT_BACKLOG_BYTES): SseSink {
  const sse = reply.sse;
  const raw = reply.raw;
  let queue: Buffer[] = [];
  let queuedBytes = 0;
  let waitingForDrain = false;
  let state: 'open' | 'closing' | 'closed' = 'open';
  let waiters: Array<() => void> = [];
  let corked = false;
  let resolveEnded!: () => void;
  const ended = new Promise<void>((resolve) => {
    resolveEnded = resolve;
  });

  const wakeWaiters = () => {
    if (waiters.length === 0) return;
    const woken = waiters;
    waiters = [];
    for (const wake of woken) wake();
  };

  const over = () => {
    queue = [];
    queuedBytes = 0;
    raw.off('drain', flushQueue);
    wakeWaiters();
    resolveEnded();
  };

  // The plugin would end the response when the handler returns; this sink decides instead.
  sse.keepAlive();
  sse.onClose(() => {
    state = 'closed';
    over();
  });

  function finalize(): void {
    if (state === 'closed') return;
    state = 'closed';
    // Ending a corked response loses its last writes on Node 24: flush them first.
    uncork();
    sse.close();
    over();
  }

  function drop(): void {
    if (state === 'closed') return;
    state = 'closed';
    raw.destroy();
    over();
  }

  function flushQueue(): void {
    waitingForDrain = false;
    if (state === 'closed') return;
    while (queue.length > 0) {
      const frame = queue.shift() as Buffer;
      queuedBytes -= frame.length;
      if (!raw.write(frame) && queue.length > 0) {
        waitingForDrain = true;
        raw.once('drain', flushQueue);
        return;
      }
    }
    if (state === 'closing') finalize();
    else wakeWaiters();
  }

  function uncork(): void {
    if (!corked) return;
    corked = false;
    raw.uncork();
  }

  /** Frames written in one tick (a replay, the lines of one read of the runner's output) leave in one socket write. */
  function writeNow(frame: Buffer | string): void {
    if (!corked) {
      corked = true;
      raw.cork();
      process.nextTick(uncork);
    }
    raw.write(frame);
  }

  function write(frame: Buffer, bounded: boolean): boolean {
    if (state !== 'open') return false;
    if (queue.length === 0 && !raw.writableNeedDrain) {
      writeNow(frame);
      return true;
    }
    if (bounded && queuedBytes + raw.writableLength + frame.length > maxBacklogBytes) {
      drop();
      return false;
    }
    queue.push(frame);
    queuedBytes += frame.length;
    if (!waitingForDrain) {
      waitingForDrain = true;
      raw.once('drain', flushQueue);
    }
    return true;
  }

  return {
    ended,
    send: (event) => write(frameOf(event), true),
    sendUntracked: (json) => {
      write(Buffer.from(`data: ${json}\n\n`), false);
    },
    comment(text) {
      // Only while nothing waits: behind a backlog a comment would tell the client nothing.
      if (state !== 'open' || queue.length > 0 || raw.writableNeedDrain) return;
      writeNow(`: ${text}\n\n`);
    },
    backlogged: () => state === 'open' && (queue.length > 0 || raw.writableNeedDrain),
    drained: () =>
      new Promise<void>((resolve) => {
        if (state !== 'open' || (queue.length === 0 && !raw.writableNeedDrain)) resolve();
        else {
          waiters.push(resolve);
          if (!waitingForDrain) {
            waitingForDrain = true;
            raw.once('drain', flushQueue);
          }
        }
      }),
    close() {
      if (state !== 'open') return;
      state = 'closing';
      // Let queued messages (the `complete`) reach the client first, if it reads them soon.
      if (queue.length === 0) return finalize();
      setTimeout(() => {
        if (state === 'closing') drop();
      }, CLOSE_GRACE_MS).unref();
    },
    abort: drop,
  };
}
