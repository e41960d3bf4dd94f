import pg from 'pg';
import type { Logger } from 'pino';

export type NotificationHandler = (payload: string) => void;

/** What a part that hears notifications asks of the listener: whether they can reach it now. */
export interface ListenerState {
  /** True while the connection is up and listening on every channel. */
  readonly connected: boolean;
}

/**
 * One dedicated PostgreSQL connection that LISTENs on every channel the instance needs (run
 * events, signals, cache invalidation, crons), each with its handler, all given when it is made.
 * When it drops, `onConnectionChange` hears `false` and it reconnects with a growing delay; it
 * hears `true` once it listens again.
 */
export interface PgListener extends ListenerState {
  /** Resolves once listening, or after a few seconds without (it keeps trying in the background). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createPgListener(options: {
  /** How to open the LISTEN connection (the pool's own settings). */
  connection: pg.ClientConfig;
  logger: Logger;
  /** Every channel listened on, with the handler of its payloads. */
  channels: Readonly<Record<string, NotificationHandler>>;
  /** Hears `false` when the connection drops (notifications may have been missed) and `true` once it listens again. */
  onConnectionChange?: ((connected: boolean) => void) | undefined;
  reconnectMs?: { min: number; max: number };
}): PgListener {
  const { logger } = options;
  const reconnect = options.reconnectMs ?? { min: 500, max: 5000 };
  const channels = new Map(Object.entries(options.channels));
  for (const channel of channels.keys())
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name: ${channel}`);
  let client: pg.Client | null = null;
  let connected = false;
  let stopped = true;
  let retryDelay = reconnect.min;
  let retryTimer: NodeJS.Timeout | null = null;

  function tell(state: boolean): void {
    try {
      options.onConnectionChange?.(state);
    } catch (error) {
      logger.error({ err: error }, 'notification connection handler failed');
    }
  }

  function onNotification(message: pg.Notification): void {
    if (message.payload === undefined) return;
    try {
      channels.get(message.channel)?.(message.payload);
    } catch (error) {
      logger.error({ err: error, channel: message.channel }, 'notification handler failed');
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
    if (wasConnected) {
      logger.warn('notification connection to PostgreSQL lost; streams poll and caches stand aside until it is back');
      tell(false);
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
      for (const channel of channels.keys()) await next.query(`LISTEN ${channel}`);
      if (client !== next) return;
      connected = true;
      retryDelay = reconnect.min;
      logger.debug('listening for PostgreSQL notifications');
      tell(true);
    } catch (error) {
      logger.debug({ err: error }, 'notification connection cannot connect; retrying');
      lost(next);
    }
  }

  return {
    get connected() {
      return connected;
    },

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
      if (current) {
        current.removeAllListeners();
        current.on('error', () => {});
        await current.end().catch(() => {});
      }
    },
  };
}
