import { type Kysely, sql } from 'kysely';
import type { Database } from '../../src/db/types.js';
import { until } from '../helpers/poll.js';
import { readStream, type SseMessage } from '../runs/helpers.js';

/** Sent to roll a holding transaction back. */
const rolledBack = new Error('rolled back by the test');

/**
 * On PostgreSQL, an event of the run numbered `seq` inserted by a transaction of the test and left uncommitted: an
 * insert of that number (a batch of the run's event log holding it) waits for this transaction, so the log's later
 * events stay unstored; `release` rolls it back. Its event also key-share-locks the run's row (the foreign key),
 * which an end's `for update` lock of that row waits for.
 */
export async function holdEventNumber(
  db: Kysely<Database>,
  runId: string,
  seq: number,
): Promise<{ pid: number; release: () => Promise<void> }> {
  let held = (_pid: number) => {};
  const holding = new Promise<number>((resolve) => (held = resolve));
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const transaction = db
    .transaction()
    .execute(async (trx) => {
      await trx.insertInto('run_events').values({ run_id: runId, seq, type: 'held', data: '{}' }).execute();
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
      held(rows[0]?.pid ?? 0);
      await released;
      throw rolledBack;
    })
    .catch((error: unknown) => {
      if (error !== rolledBack) throw error;
    });
  const pid = await holding;
  return {
    pid,
    release: async () => {
      release();
      await transaction;
    },
  };
}

/** Sessions of this file's own database (other files' tests share the server) waiting for a lock; of `pid`'s only, if given. */
export async function lockWaits(db: Kysely<Database>, pid?: number): Promise<number> {
  const { rows } = await sql<{ waiting: number }>`
    select count(*)::integer as waiting from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock'
      and (${pid ?? null}::integer is null or ${pid ?? null}::integer = any(pg_blocking_pids(pid)))`.execute(db);
  return rows[0]?.waiting ?? 0;
}

/** Waits until at least `count` sessions wait for a lock (of `pid`'s, if given). */
export const untilLockWaits = (db: Kysely<Database>, count: number, pid?: number) =>
  until(async () => (await lockWaits(db, pid)) >= count);

/** Once the run's event numbered `seq` is stored. */
export const untilStored = (db: Kysely<Database>, runId: string, seq: number) =>
  until(async () => {
    const row = await db
      .selectFrom('run_events')
      .select('seq')
      .where('run_id', '=', runId)
      .where('seq', '=', seq)
      .executeTakeFirst();
    return row !== undefined;
  });

/** A run's stream read as it goes: `reached` resolves once the client has got the event of that id. */
export function follow(url: string) {
  const seen: SseMessage[] = [];
  const waiting: { id: string; resolve: () => void }[] = [];
  const done = readStream(url, {
    stopWhen: (message) => {
      seen.push(message);
      for (const waiter of waiting.filter((waiter) => waiter.id === message.id)) waiter.resolve();
      return false;
    },
  });
  const reached = (id: number) =>
    seen.some((message) => message.id === String(id))
      ? Promise.resolve()
      : new Promise<void>((resolve) => waiting.push({ id: String(id), resolve }));
  return { done, reached };
}
