import type pg from 'pg';
import type { Logger } from 'pino';
import type { DatabaseHandle } from '../db/connect.js';

/** Where the run-ending transaction announces its deliveries; PostgreSQL sends NOTIFY only at commit. */
export const DELIVERY_CHANNEL = 'crewd_webhook_deliveries';

const RECONNECT_MS = 1_000;

export interface CommitListener {
  /** True while notifications can arrive; when false, callers fall back to polling. */
  readonly active: boolean;
  close(): Promise<void>;
}

/**
 * LISTENs on DELIVERY_CHANNEL: a dedicated connection on PostgreSQL (reconnected when lost),
 * the one session on PGlite. Each payload is a delivery id whose transaction has committed.
 */
export async function listenForCommits(
  database: DatabaseHandle,
  onPayload: (payload: string) => void,
  logger: Logger,
): Promise<CommitListener> {
  const { pool, pglite } = database;
  if (pglite) {
    // Through a Kysely connection, so the LISTEN cannot land inside someone's transaction.
    const unlisten = await database.db
      .connection()
      .execute(() => pglite.listen(DELIVERY_CHANNEL, (payload) => onPayload(payload)));
    return {
      active: true,
      close: async () => {
        await database.db.connection().execute(() => unlisten());
      },
    };
  }
  if (!pool) return { active: false, close: async () => {} };

  let client: pg.PoolClient | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;
  const state = { active: false };

  const connect = async () => {
    timer = null;
    if (closed) return;
    let next: pg.PoolClient | null = null;
    try {
      next = await pool.connect();
      const current = next;
      current.on('notification', (message) => {
        if (message.channel === DELIVERY_CHANNEL && message.payload) onPayload(message.payload);
      });
      current.on('error', (error) => {
        if (client !== current) return;
        logger.warn({ err: error }, 'webhook commit listener lost its connection; reconnecting');
        state.active = false;
        client = null;
        current.release(error);
        if (!closed) timer = setTimeout(connect, RECONNECT_MS).unref();
      });
      await current.query(`LISTEN ${DELIVERY_CHANNEL}`);
      if (closed) {
        current.release();
        return;
      }
      client = current;
      state.active = true;
    } catch (error) {
      next?.release(error instanceof Error ? error : true);
      if (!closed) timer = setTimeout(connect, RECONNECT_MS).unref();
    }
  };
  await connect();

  return {
    get active() {
      return state.active;
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      state.active = false;
      const current = client;
      client = null;
      if (current) {
        try {
          await current.query(`UNLISTEN ${DELIVERY_CHANNEL}`);
          current.release();
        } catch (error) {
          current.release(error instanceof Error ? error : true);
        }
      }
    },
  };
}
