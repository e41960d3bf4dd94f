import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { ListenerState } from '../db/pg-listener.js';
import type { Database } from '../db/types.js';
import type { LiveEvent, LiveListener, StreamEnd } from './types.js';

export const RUN_EVENTS_CHANNEL = 'crewd_run_events';
/** PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; stay below with room for the envelope. */
const MAX_PAYLOAD_BYTES = 7800;
/** An event bigger than this travels as its number only; listeners read it from the store. */
const MAX_INLINE_EVENT_BYTES = 2000;

/** `[seq, json]`, `[seq]` for an event to be read from the store, or `[seq, json, end]` for the final one. */
type WireEvent = [number] | [number, string] | [number, string, StreamEnd];
interface Payload {
  /** Sender's instance id: an instance ignores its own notifications (its bus already has them). */
  i: string;
  r: string;
  e: WireEvent[];
}

export interface RemoteSubscription {
  close(): void;
}

export interface PgEventFeed {
  /** True while the LISTEN connection is up: runs of other instances can be followed live. */
  readonly connected: boolean;
  /** Null while the feed is down (streams then poll the store). `onLost` is called if it goes down later. */
  subscribe(runId: string, listener: LiveListener, onLost: () => void): RemoteSubscription | null;
  /** Announces events the owner has stored (or a run's end, once committed) to other instances. */
  announce(runId: string, events: readonly LiveEvent[]): void;
  /** A notification's payload on `crewd_run_events`, as the instance's listener hears it. */
  heard(raw: string): void;
  /** The listener's connection went down (subscribers are told; they poll the store) or came back. */
  connectionChanged(connected: boolean): void;
  start(): void;
  stop(): Promise<void>;
}

interface Subscriber {
  listener: LiveListener;
  onLost: () => void;
}

function wire(event: LiveEvent): WireEvent {
  if (event.end)
    return [event.seq, Buffer.byteLength(event.json) > MAX_INLINE_EVENT_BYTES ? '' : event.json, event.end];
  if (Buffer.byteLength(event.json) > MAX_INLINE_EVENT_BYTES) return [event.seq];
  return [event.seq, event.json];
}

/** Splits one run's events into payloads under PostgreSQL's size limit, in order. */
function payloadsFor(instanceId: string, runId: string, events: readonly LiveEvent[]): string[] {
  const out: string[] = [];
  let batch: WireEvent[] = [];
  let size = 0;
  const envelope = Buffer.byteLength(JSON.stringify({ i: instanceId, r: runId, e: [] }));
  for (const event of events) {
    let item = wire(event);
    let itemSize = Buffer.byteLength(JSON.stringify(item)) + 1;
    // A final event whose output is too big for one payload: listeners read the run from the store.
    if (envelope + itemSize > MAX_PAYLOAD_BYTES && event.end) {
      item = [event.seq, '', { ...event.end, output: null, error: null }];
      itemSize = Buffer.byteLength(JSON.stringify(item)) + 1;
    }
    if (batch.length > 0 && envelope + size + itemSize > MAX_PAYLOAD_BYTES) {
      out.push(JSON.stringify({ i: instanceId, r: runId, e: batch } satisfies Payload));
      batch = [];
      size = 0;
    }
    batch.push(item);
    size += itemSize;
  }
  if (batch.length > 0) out.push(JSON.stringify({ i: instanceId, r: runId, e: batch } satisfies Payload));
  return out;
}

/**
 * Run events across instances over PostgreSQL LISTEN/NOTIFY. The owner of a run announces
 * events once they are stored (so a listener that sees event N can read 1..N from the store)
 * and its end once committed; announcements gathered in one moment go out in one statement.
 * Notifications arrive on the instance's shared listener, which hands them to `heard`; when its
 * connection drops, subscribers are told (they fall back to polling the store) and subscribe
 * afresh on their next stream.
 */
export function createPgEventFeed(options: {
  /** The instance's listener, whose handler of `crewd_run_events` is this feed's `heard`. */
  listener: ListenerState;
  db: Kysely<Database>;
  instanceId: () => string;
  /** Whether other instances are alive; alone, an instance announces nothing (no one would hear it). */
  peersAlive: () => boolean;
  logger: Logger;
}): PgEventFeed {
  const { logger, listener } = options;
  const subscribers = new Map<string, Set<Subscriber>>();
  let stopped = true;
  let queue: string[] = [];
  let sending: Promise<void> | null = null;

  function onNotification(raw: string): void {
    let payload: Payload;
    try {
      payload = JSON.parse(raw) as Payload;
    } catch {
      return;
    }
    if (payload.i === options.instanceId()) return;
    const set = subscribers.get(payload.r);
    if (!set) return;
    for (const [seq, json, end] of payload.e) {
      const event: LiveEvent = { seq, json: json ?? '', remote: true, ...(end ? { end } : {}) };
      for (const subscriber of set) {
        try {
          subscriber.listener(event);
        } catch {
          // One broken stream must not keep the event from the others.
        }
      }
    }
  }

  function lostAll(): void {
    const all = [...subscribers.values()].flatMap((set) => [...set]);
    subscribers.clear();
    for (const subscriber of all) {
      try {
        subscriber.onLost();
      } catch {
        // Nothing more to tell it.
      }
    }
  }

  function send(): void {
    if (sending || queue.length === 0) return;
    const payloads = queue;
    queue = [];
    sending = sql`select pg_notify(${RUN_EVENTS_CHANNEL}, p) from unnest(${payloads}::text[]) as p`
      .execute(options.db)
      .then(
        () => {},
        (error: unknown) => {
          // Listeners notice the gap at the next event (or their quiet check) and read the store.
          logger.debug({ err: error }, 'announcing run events failed');
        },
      )
      .finally(() => {
        sending = null;
        send();
      });
  }

  return {
    get connected() {
      return listener.connected;
    },

    heard: onNotification,

    connectionChanged(connected) {
      if (!connected) lostAll();
    },

    subscribe(runId, onEvent, onLost) {
      if (!listener.connected) return null;
      let set = subscribers.get(runId);
      if (!set) {
        set = new Set();
        subscribers.set(runId, set);
      }
      const subscriber: Subscriber = { listener: onEvent, onLost };
      set.add(subscriber);
      return {
        close() {
          const current = subscribers.get(runId);
          if (!current) return;
          current.delete(subscriber);
          if (current.size === 0) subscribers.delete(runId);
        },
      };
    },

    announce(runId, events) {
      if (stopped || events.length === 0 || !options.peersAlive()) return;
      const wasEmpty = queue.length === 0;
      queue.push(...payloadsFor(options.instanceId(), runId, events));
      // Gathers what the current moment announces into one statement.
      if (wasEmpty && !sending) setImmediate(send);
    },

    start() {
      stopped = false;
    },

    async stop() {
      stopped = true;
      subscribers.clear();
      if (sending) await sending;
    },
  };
}
