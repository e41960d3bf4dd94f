import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import type { LiveEvent, LiveListener, RunEnd } from './types.js';

export const RUN_EVENTS_CHANNEL = 'crewd_run_events';
/** PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; stay below with room for the envelope. */
const MAX_PAYLOAD_BYTES = 7800;
/** An event bigger than this travels as its number only; listeners read it from the store. */
const MAX_INLINE_EVENT_BYTES = 2000;

/** `[seq, json]`, `[seq]` for an event to be read from the store, or `[seq, json, end]` for the final one. */
type WireEvent = [number] | [number, string] | [number, string, RunEnd];
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
  start(): Promise<void>;
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
 * One dedicated connection per instance listens; when it drops, subscribers are told (they
 * fall back to polling the store) and it reconnects with a growing delay.
 */
export function createPgEventFeed(options: {
  /** How to open the LISTEN connection (the pool's own settings). */
  connection: pg.ClientConfig;
  db: Kysely<Database>;
  instanceId: () => string;
  logger: Logger;
  reconnectMs?: { min: number; max: number };
}): PgEventFeed {
  const { logger } = options;
  const reconnect = options.reconnectMs ?? { min: 500, max: 5000 };
  const subscribers = new Map<string, Set<Subscriber>>();
  let client: pg.Client | null = null;
  let connected = false;
  let stopped = true;
  let retryDelay = reconnect.min;
  let retryTimer: NodeJS.Timeout | null = null;
  let queue: string[] = [];
  let sending: Promise<void> | null = null;

  function onNotification(message: pg.Notification): void {
    if (message.channel !== RUN_EVENTS_CHANNEL || !message.payload) return;
    let payload: Payload;
    try {
      payload = JSON.parse(message.payload) as Payload;
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

  function lost(failed: pg.Client): void {
    if (client !== failed) return;
    client = null;
    const wasConnected = connected;
    connected = false;
    failed.removeAllListeners('notification');
    failed.on('error', () => {});
    void failed.end().catch(() => {});
    if (wasConnected) logger.warn('run event feed lost its connection; streams poll until it is back');
    // Every subscriber falls back to polling; they subscribe afresh on their next stream.
    const all = [...subscribers.values()].flatMap((set) => [...set]);
    subscribers.clear();
    for (const subscriber of all) {
      try {
        subscriber.onLost();
      } catch {
        // Nothing more to tell it.
      }
    }
    scheduleConnect();
  }

  function scheduleConnect(): void {
    if (stopped || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void connect();
    }, retryDelay);
    retryTimer.unref();
    retryDelay = Math.min(retryDelay * 2, reconnect.max);
  }

  async function connect(): Promise<void> {
    if (stopped || client) return;
    const next = new pg.Client(options.connection);
    client = next;
    next.on('error', () => lost(next));
    next.on('end', () => lost(next));
    next.on('notification', onNotification);
    try {
      await next.connect();
      await next.query(`LISTEN ${RUN_EVENTS_CHANNEL}`);
      if (client !== next) return;
      connected = true;
      retryDelay = reconnect.min;
      logger.debug('run event feed listening');
    } catch (error) {
      logger.debug({ err: error }, 'run event feed cannot connect; retrying');
      lost(next);
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
      return connected;
    },

    subscribe(runId, listener, onLost) {
      if (!connected) return null;
      let set = subscribers.get(runId);
      if (!set) {
        set = new Set();
        subscribers.set(runId, set);
      }
      const subscriber: Subscriber = { listener, onLost };
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
      if (stopped || events.length === 0) return;
      const wasEmpty = queue.length === 0;
      queue.push(...payloadsFor(options.instanceId(), runId, events));
      // Gathers what the current moment announces into one statement.
      if (wasEmpty && !sending) setImmediate(send);
    },

    /** Resolves once listening, or after a few seconds without (it keeps trying in the background). */
    async start() {
      stopped = false;
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 3000);
        timer.unref();
      });
      await Promise.race([connect(), waited]);
      clearTimeout(timer);
    },

    async stop() {
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = null;
      const current = client;
      client = null;
      connected = false;
      subscribers.clear();
      if (sending) await sending;
      if (current) {
        current.removeAllListeners();
        current.on('error', () => {});
        await current.end().catch(() => {});
      }
    },
  };
}
