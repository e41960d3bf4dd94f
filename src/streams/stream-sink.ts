import type { LiveEvent } from '../events/types.js';

/** Where a stream writes; `send` answers false when the client was dropped for being too slow. */
export interface StreamSink {
  send(event: LiveEvent): boolean;
  /** A message without id (complete, heartbeat, timeout, error). */
  sendUntracked(json: string): void;
  comment(text: string): void;
  /** Ends the response after what is queued. */
  close(): void;
  /** Cuts the connection now (a client too far behind). */
  abort(): void;
  /** Stored events are replayed at the client's pace: true while earlier ones still wait. */
  backlogged(): boolean;
  drained(): Promise<void>;
}

/** Before `start`, a stream has no client to write to. */
export const CLOSED_SINK: StreamSink = {
  send: () => false,
  sendUntracked: () => {},
  comment: () => {},
  close: () => {},
  abort: () => {},
  backlogged: () => false,
  drained: async () => {},
};

/**
 * How far one client may fall behind on live events before it is dropped (it can resume with
 * Last-Event-ID). Above the largest event (1 MiB), so one big event alone never drops anyone.
 */
export const MAX_CLIENT_BACKLOG_BYTES = 4 * 1024 * 1024;
