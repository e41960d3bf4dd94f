import net from 'node:net';
import type { FastifyReply } from 'fastify';
import type { LiveEvent } from '../events/types.js';
import { type PacedSink, queueForWrite, writeNowAllowed } from './socket-writer.js';
import { MAX_CLIENT_BACKLOG_BYTES, type StreamSink } from './stream-sink.js';

/** How long a closing stream waits for a lagging client to take its last messages. */
const CLOSE_GRACE_MS = 10_000;

/** A replay of stored events waits for the client once this much is queued, so it goes at the client's pace. */
const REPLAY_QUEUE_BYTES = 64 * 1024;

/**
 * A frame as one HTTP/1.1 chunk (its size line, the frame, CRLF). A chunked response's frames go
 * straight to its socket in this form, one buffer each, shared by every client: Node's own
 * chunked write would add three small pieces per frame and client, which is most of a large
 * fan-out's cost. A response that is not chunked is sent the frame alone (frameIn).
 */
function chunkOf(frame: string): Buffer {
  const size = Buffer.byteLength(frame);
  const sizeLine = `${size.toString(16)}\r\n`;
  const chunk = Buffer.allocUnsafe(sizeLine.length + size + 2);
  chunk.write(sizeLine, 0, 'latin1');
  chunk.write(frame, sizeLine.length, 'utf8');
  chunk.write('\r\n', sizeLine.length + size, 'latin1');
  return chunk;
}

/** The frame inside a chunk: after its size line, before the closing CRLF. */
function frameIn(chunk: Buffer): Buffer {
  return chunk.subarray(chunk.indexOf(0x0a) + 1, chunk.length - 2);
}

/**
 * The SSE frame of an event as a chunk, encoded once and shared by every client of the run: with
 * a thousand clients, one event costs one encoding and a thousand zero-copy socket writes.
 */
function chunkOfEvent(event: LiveEvent): Buffer {
  event.frame ??= chunkOf(`id: ${event.seq}\ndata: ${event.json}\n\n`);
  return event.frame;
}

/** The last message without id, encoded once: a run's `complete` goes to all its streams in a row. */
let lastUntracked: { json: string; chunk: Buffer } = { json: '', chunk: Buffer.alloc(0) };
function untrackedChunkOf(json: string): Buffer {
  if (lastUntracked.json !== json) lastUntracked = { json, chunk: chunkOf(`data: ${json}\n\n`) };
  return lastUntracked.chunk;
}

/**
 * How a stream's messages are written, when not as `/v1`'s `id:` and `data:` (CONTRACTS §7): the
 * LangGraph API frames the same event log as the Agent Server's events (CONTRACTS §14). Each
 * answers the whole SSE frame (ending in a blank line), or null to send nothing for it.
 */
export interface SseFraming {
  /** Sent before anything else. */
  opening(): string | null;
  event(event: LiveEvent): string | null;
  /** A message without id (complete, heartbeat, timeout, error), as its JSON. */
  untracked(json: string): string | null;
}

export interface SseSink extends StreamSink {
  /** Resolves once the response is over: ended after its last message, dropped, or closed by the client. */
  readonly ended: Promise<void>;
}

/**
 * One client's end of an event stream. @fastify/sse negotiates the route, sends the headers and
 * reports the connection's end; the frames themselves are written here, a quiet stream's next one
 * at once and what follows it in paced turns (socket-writer.ts), never waiting on the client: a
 * socket that does not take them keeps them queued, and a client whose backlog passes
 * MAX_CLIENT_BACKLOG_BYTES is disconnected (it can resume with Last-Event-ID), so a slow reader
 * costs bounded memory and never holds up the run or the other readers.
 */
export function createSseSink(
  reply: FastifyReply,
  maxBacklogBytes = MAX_CLIENT_BACKLOG_BYTES,
  framing: SseFraming | null = null,
): SseSink {
  const sse = reply.sse;
  const raw = reply.raw;
  // Chunks go straight to a network socket only: a response on anything else (fastify.inject's drops
  // what is written to its socket) gets each frame through the response.
  const socket = raw.socket instanceof net.Socket ? raw.socket : null;
  /** Node puts the header on the wire with the first write through the response; chunks may follow it straight. */
  let headerOnWire = false;
  let queue: Buffer[] = [];
  let queuedBytes = 0;
  /** In the writer's queue, or waiting for the socket's `drain`: either way a flush will come. */
  let flushPending = false;
  let state: 'open' | 'closing' | 'closed' = 'open';
  let waiters: Array<() => void> = [];
  /** While closing: when to look whether the client still lags; cleared once the response is over, so that it
   * does not keep the response, its socket and this sink alive for the grace after they ended. */
  let graceTimer: NodeJS.Timeout | null = null;
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
    if (graceTimer) clearTimeout(graceTimer);
    graceTimer = null;
    queue = [];
    queuedBytes = 0;
    raw.off('drain', onDrain);
    socket?.off('drain', onDrain);
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
    else if (!needsDrain()) wakeWaiters();
  }

  /** Whether the socket's buffer is full, as the response or the socket itself reports it. */
  function needsDrain(): boolean {
    return raw.writableNeedDrain || socket?.writableNeedDrain === true;
  }

  function waitForDrain(): void {
    if (socket?.writableNeedDrain) socket.once('drain', onDrain);
    else raw.once('drain', onDrain);
  }

  /** Writes queued chunks, straight to the socket once it has the header, else as frames through the response. */
  function writeQueued(budget: number): number {
    const straight = headerOnWire && raw.chunkedEncoding && socket !== null;
    const corked = queue.length > 1;
    if (corked) raw.cork();
    let written = 0;
    while (queue.length > 0 && written < budget && !needsDrain()) {
      const chunk = queue.shift() as Buffer;
      queuedBytes -= chunk.length;
      written += chunk.length;
      if (straight) socket.write(chunk);
      else raw.write(frameIn(chunk));
    }
    if (corked) raw.uncork();
    if (written > 0) headerOnWire = true;
    return written;
  }

  const paced: PacedSink = {
    flush(budget) {
      flushPending = false;
      if (state === 'closed') return 0;
      const written = writeQueued(budget);
      if (needsDrain()) {
        flushPending = true;
        waitForDrain();
      } else if (queue.length > 0) requestFlush();
      else settled();
      return written;
    },
  };

  function write(chunk: Buffer, bounded: boolean): boolean {
    if (state !== 'open') return false;
    if (bounded && queuedBytes + raw.writableLength + chunk.length > maxBacklogBytes) {
      drop();
      return false;
    }
    queue.push(chunk);
    queuedBytes += chunk.length;
    if (!flushPending && queue.length === 1 && !needsDrain() && writeNowAllowed()) writeNow();
    else requestFlush();
    return true;
  }

  /**
   * The one queued frame, written at once (a quiet stream's next event); whatever follows before
   * the next turn queues behind the flush requested here and leaves together in that turn.
   */
  function writeNow(): void {
    writeQueued(Number.POSITIVE_INFINITY);
    flushPending = true;
    if (needsDrain()) waitForDrain();
    else queueForWrite(paced);
  }

  const backlogged = () => state === 'open' && (queuedBytes >= REPLAY_QUEUE_BYTES || needsDrain());

  /** A framed message; a message the framing leaves out counts as sent. */
  const writeFramed = (frame: string | null, bounded: boolean) => frame === null || write(chunkOf(frame), bounded);
  const opening = framing?.opening() ?? null;
  if (opening !== null) writeFramed(opening, false);

  return {
    ended,
    send: (event) => (framing ? writeFramed(framing.event(event), true) : write(chunkOfEvent(event), true)),
    sendUntracked: (json) => {
      if (framing) writeFramed(framing.untracked(json), false);
      else write(untrackedChunkOf(json), false);
    },
    comment(text) {
      // Only while nothing waits: behind a backlog a comment would tell the client nothing.
      if (state !== 'open' || queue.length > 0 || needsDrain()) return;
      raw.write(`: ${text}\n\n`);
      headerOnWire = true;
    },
    backlogged,
    drained: () =>
      new Promise<void>((resolve) => {
        if (state !== 'open' || (queue.length === 0 && !needsDrain())) resolve();
        else {
          waiters.push(resolve);
          if (!flushPending) {
            flushPending = true;
            waitForDrain();
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
        graceTimer = null;
        if (state !== 'closing') return;
        // Still waiting for its turn (a burst to many streams): not the client's fault, wait on.
        if (needsDrain()) drop();
        else graceTimer = setTimeout(lagging, CLOSE_GRACE_MS).unref();
      };
      graceTimer = setTimeout(lagging, CLOSE_GRACE_MS).unref();
    },
    abort: drop,
  };
}
