import os from 'node:os';
import path from 'node:path';
import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import type { Database } from '../db/types.js';
import { randomToken } from '../ids.js';

export const LOST_RUN_ERROR = 'Runner lost: the crewd instance running it stopped';

/** Stable across restarts of one installation, so a restart knows the runs its previous life left. */
export function instanceName(dataDir: string): string {
  return `${os.hostname()}:${path.resolve(dataDir)}`;
}

/**
 * This incarnation's row in `instances`: a lease renewed by heartbeats. Another instance whose
 * lease lapsed, or an earlier incarnation of this one, is dead, and so are its runs' processes.
 */
export function createInstanceLease(db: Kysely<Database>, options: { name: string; leaseSeconds: number }) {
  const id = `ins_${randomToken(24)}`;
  const expiry = () => sql<Date>`now() + ${options.leaseSeconds} * interval '1 second'`;

  /** Read in the statement that writes this instance's row: whether other instances are alive. */
  const peersAlive = (eb: ExpressionBuilder<Database, 'instances'>) =>
    eb
      .exists(
        eb
          .selectFrom('instances as other')
          .select('other.id')
          .where('other.id', '<>', id)
          .where('other.stopped_at', 'is', null)
          .where('other.expires_at', '>', sql<Date>`now()`),
      )
      .as('peers');

  return {
    id,
    name: options.name,

    /** Registers this incarnation; true when other instances are alive. */
    async register(): Promise<boolean> {
      const row = await db
        .insertInto('instances')
        .values({ id, name: options.name, expires_at: expiry() })
        .returning(peersAlive)
        .executeTakeFirstOrThrow();
      return Boolean(row.peers);
    },

    /** Renews the lease; true when other instances are alive. */
    async heartbeat(): Promise<boolean> {
      const row = await db
        .updateTable('instances')
        .set({ heartbeat_at: sql<Date>`now()`, expires_at: expiry() })
        .where('id', '=', id)
        .returning(peersAlive)
        .executeTakeFirst();
      // No row (deleted behind its back): assume others, so events are still announced.
      return row ? Boolean(row.peers) : true;
    },

    async release(): Promise<void> {
      await db
        .updateTable('instances')
        .set({ stopped_at: sql<Date>`now()`, expires_at: sql<Date>`now()` })
        .where('id', '=', id)
        .execute();
    },

    /** Runs marked running whose instance is dead (or unknown). */
    async findLostRuns(): Promise<string[]> {
      const rows = await db
        .selectFrom('runs')
        .leftJoin('instances', 'instances.id', 'runs.instance_id')
        .select('runs.id')
        .where('runs.status', '=', 'running')
        .where((eb) =>
          eb.or([
            eb('runs.instance_id', 'is', null),
            eb.and([
              eb('runs.instance_id', '<>', id),
              eb.or([
                eb('instances.id', 'is', null),
                eb('instances.expires_at', '<', sql<Date>`now()`),
                eb('instances.stopped_at', 'is not', null),
                eb('instances.name', '=', options.name),
              ]),
            ]),
          ]),
        )
        .orderBy('runs.created_at')
        .limit(500)
        .execute();
      return rows.map((row) => row.id);
    },

    /** Forgets instances long dead that hold no running run any more. */
    async prune(): Promise<void> {
      await db
        .deleteFrom('instances')
        .where('id', '<>', id)
        .where('expires_at', '<', sql<Date>`now() - interval '1 day'`)
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom('runs')
                .select('runs.id')
                .where('runs.status', '=', 'running')
                .whereRef('runs.instance_id', '=', 'instances.id'),
            ),
          ),
        )
        .execute();
    },
  };
}

export type InstanceLease = ReturnType<typeof createInstanceLease>;
