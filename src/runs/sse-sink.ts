import type { FastifyReply } from 'fastify';
import type { LiveEvent } from '../events/types.js';
import { type PacedSink, queueForWrite } from './socket-writer.js';
import { MAX_CLIENT_BACKLOG_BYTES, type StreamSink } from './stream-sink.js';

/** How long a closing stream waits for a lagging client to take its last messages. */
const CLOSE_GRACE_MS = 10_000;

/** A replay of stored events waits for the client once this much is queued, so it goes at the client's pace. */
const REPLAY_QUEUE_BYTES = 64 * 1024;

/**
 * The SSE frame of an event, encoded once and shared by every client of the run: with a
 * thousand clients, one event costs one encoding and a thousand zero-copy socket writes.
 */
function frameOf(event: LiveEvent): Buffer {
  event.frame ??= Buffer.from(`id: ${event.seq}\ndata: ${event.json}\n\n`);
  return event.frame;
}

/** The last message without id, encoded once: a run's `complete` goes to all its streams in a row. */
let lastUntracked = { json: '', frame: Buffer.alloc(0) };
function untrackedFrameOf(json: string): Buffer {
  if (lastUntracked.json !== json) lastUntracked = { json, frame: Buffer.from(`data: ${json}\n\n`) };
  return lastUntracked.frame;
}

export interface SseSink extends StreamSink {
  /** Resolves once the response is over: ended after its last message, dropped, or closed by the client. */
  readonly ended: Promise<void>;
}

/**
 * One client's end of an event stream. @fastify/sse negotiates the route, sends the headers and
 * reports the connection's end; the frames themselves are queued here and written in paced turns
 * (socket-writer.ts), never waiting on the client: a socket that does not take them keeps them
 * queued, and a client whose backlog passes MAX_CLIENT_BACKLOG_BYTES is disconnected (it can
 * resume with Last-Event-ID), so a slow reader costs bounded memory and never holds up the run
 * or the other readers.
 */
export function createSseSink(reply: FastifyReply, maxBacklogBytes = MAX_CLIENT_BACKLOG_BYTES): SseSink {
  const sse = reply.sse;
  const raw = reply.raw;
  let queue: Buffer[] = [];
  let queuedBytes = 0;
  /** In the writer's queue, or waiting for the socket's `drain`: either way a flush will come. */
  let flushPending = false;
  let state: 'open' | 'closing' | 'closed' = 'open';
  let waiters: Array<() => void> = [];
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
    raw.off('drain', onDrain);
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
    sse.close();
    over();
  }

  function drop(): void {
    if (state === 'closed') return;
    state = 'closed';
    raw.destroy();
    over();
  }

  function onDrain(): void {
    flushPending = false;
    if (queue.length > 0) requestFlush();
    else settled();
  }

  function requestFlush(): void {
    if (flushPending || state === 'closed') return;
    flushPending = true;
    queueForWrite(paced);
  }

  /** Everything queued has been handed to the socket. */
  function settled(): void {
    if (state === 'closing') finalize();
    else if (!raw.writableNeedDrain) wakeWaiters();
  }

  const paced: PacedSink = {
    flush(budget) {
      flushPending = false;
      if (state === 'closed') return 0;
      let written = 0;
      raw.cork();
      while (queue.length > 0 && written < budget && !raw.writableNeedDrain) {
        const frame = queue.shift() as Buffer;
        queuedBytes -= frame.length;
        written += frame.length;
        raw.write(frame);
      }
      raw.uncork();
      if (raw.writableNeedDrain) {
        flushPending = true;
        raw.once('drain', onDrain);
      } else if (queue.length > 0) requestFlush();
      else settled();
      return written;
    },
  };

  function write(frame: Buffer, bounded: boolean): boolean {
    if (state !== 'open') return false;
    if (bounded && queuedBytes + raw.writableLength + frame.length > maxBacklogBytes) {
      drop();
      return false;
    }
    queue.push(frame);
    queuedBytes += frame.length;
    requestFlush();
    return true;
  }

  const backlogged = () => state === 'open' && (queuedBytes >= REPLAY_QUEUE_BYTES || raw.writableNeedDrain);

  return {
    ended,
    send: (event) => write(frameOf(event), true),
    sendUntracked: (json) => {
      write(untrackedFrameOf(json), false);
    },
    comment(text) {
      // Only while nothing waits: behind a backlog a comment would tell the client nothing.
      if (state !== 'open' || queue.length > 0 || raw.writableNeedDrain) return;
      raw.write(`: ${text}\n\n`);
    },
    backlogged,
    drained: () =>
      new Promise<void>((resolve) => {
        if (state !== 'open' || (queue.length === 0 && !raw.writableNeedDrain)) resolve();
        else {
          waiters.push(resolve);
          if (!flushPending) {
            flushPending = true;
            raw.once('drain', onDrain);
          }
        }
      }),
    close() {
      if (state !== 'open') return;
      state = 'closing';
      // Ended in a paced turn too: a run's end closes all its streams at once. Queued messages (the
      // `complete`) reach the client first, if it reads them soon.
      if (!flushPending) requestFlush();
      const lagging = () => {
        if (state !== 'closing') return;
        // Still waiting for its turn (a burst to many streams): not the client's fault, wait on.
        if (raw.writableNeedDrain) drop();
        else setTimeout(lagging, CLOSE_GRACE_MS).unref();
      };
      setTimeout(lagging, CLOSE_GRACE_MS).unref();
    },
    abort: drop,
  };
}
