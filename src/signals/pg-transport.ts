import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import type { SHARED_SIGNALS, SharedMessage, SignalTransport } from './hub.js';

export const SIGNALS_CHANNEL = 'crewd_signals';

/** `{ i: sender's instance id, n: signal name, p: payload }`: an instance ignores its own. */
interface Wire {
  i: string;
  n: string;
  p: Record<string, unknown>;
}

/** The message in a notification, or null for one of another sender's version or a foreign payload. */
function read(raw: string, self: string): SharedMessage | null {
  let wire: Wire;
  try {
    wire = JSON.parse(raw) as Wire;
  } catch {
    return null;
  }
  if (typeof wire !== 'object' || wire === null || wire.i === self || typeof wire.p !== 'object' || !wire.p)
    return null;
  const text = (key: string) => (typeof wire.p[key] === 'string' ? (wire.p[key] as string) : null);
  switch (wire.n as (typeof SHARED_SIGNALS)[number]) {
    case 'queued':
      return { name: 'queued', payload: {} };
    case 'threadReleased': {
      const threadId = text('threadId');
      return threadId ? { name: 'threadReleased', payload: { threadId } } : null;
    }
    case 'stopRequested': {
      const runId = text('runId');
      return runId ? { name: 'stopRequested', payload: { runId } } : null;
    }
    case 'instanceStarted': {
      const instanceId = text('instanceId');
      return instanceId ? { name: 'instanceStarted', payload: { instanceId } } : null;
    }
    default:
      return null;
  }
}

export interface PgSignalTransport extends SignalTransport {
  /** A notification's payload on `crewd_signals`, as the instance's listener hears it (db/pg-listener.ts). */
  heard(raw: string): void;
}

/**
 * Shared signals between instances on one PostgreSQL, over LISTEN/NOTIFY on `crewd_signals`: sent
 * with `pg_notify` on the pool, heard on the instance's one LISTEN connection, whose handler of the
 * channel is `heard`. A notification lost (the connection was down) is made up for by the
 * housekeeping tick.
 */
export function createPgSignalTransport(options: {
  db: Kysely<Database>;
  /** This instance's id: its own notifications come back to it and are ignored. */
  instanceId: string;
  logger: Logger;
}): PgSignalTransport {
  const { db, instanceId, logger } = options;
  let deliverTo: ((message: SharedMessage) => void) | null = null;
  return {
    connect(deliver) {
      deliverTo = deliver;
    },

    heard(raw) {
      const message = read(raw, instanceId);
      if (message) deliverTo?.(message);
    },

    send(message) {
      const wire: Wire = { i: instanceId, n: message.name, p: message.payload };
      sql`select pg_notify(${SIGNALS_CHANNEL}, ${JSON.stringify(wire)})`.execute(db).catch((error: unknown) => {
        logger.debug({ err: error, signal: message.name }, 'signal not sent; the other instances act on their tick');
      });
    },
  };
}
