import { sql } from 'kysely';
import type { ThreadInterrupt } from '../db/columns.js';
import type { Db } from '../db/types.js';
import type { ThreadStatus } from './db-types.js';

const threadColumns = [
  'id',
  'org_id',
  'deployment_id',
  'status',
  'metadata',
  'values',
  'active_run_id',
  'interrupts',
  'created_at',
  'updated_at',
] as const;

export function insertThread(
  db: Db,
  row: {
    id: string;
    org_id: string;
    deployment_id: string;
    metadata: Record<string, unknown>;
    values: Record<string, unknown> | null;
  },
) {
  return db
    .insertInto('threads')
    .values({
      ...row,
      status: 'idle',
      metadata: JSON.stringify(row.metadata),
      values: row.values === null ? null : JSON.stringify(row.values),
    })
    .returning(threadColumns)
    .executeTakeFirstOrThrow();
}

export function findThread(db: Db, orgId: string, id: string) {
  return db
    .selectFrom('threads')
    .select(threadColumns)
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export type ThreadRecord = NonNullable<Awaited<ReturnType<typeof findThread>>>;

export function listThreads(
  db: Db,
  orgId: string,
  filter: { deployment_id: string; status?: ThreadStatus | undefined },
  page: { limit: number; offset: number },
) {
  let query = db
    .selectFrom('threads')
    .select(threadColumns)
    .where('org_id', '=', orgId)
    .where('deployment_id', '=', filter.deployment_id);
  if (filter.status) query = query.where('status', '=', filter.status);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
}

/** The runner checkpoint of the thread's latest checkpoint row (null when none, or when a PATCH wrote it). */
const latestCheckpoint = (threadId: string) =>
  sql<unknown>`(select c.checkpoint from thread_checkpoints c where c.thread_id = ${threadId}
    order by c.created_at desc, c.id desc limit 1)`;

/**
 * Takes a thread that is not busy for a run (with `command`, only an interrupted one) and clears its
 * interrupts. Concurrent takers of one thread queue on its row lock and re-check the condition, so
 * exactly one of them wins. Returns what the runner starts from.
 */
export function takeThread(
  db: Db,
  claim: { orgId: string; id: string; deploymentId: string; runId: string; interruptedOnly: boolean },
) {
  let query = db
    .updateTable('threads')
    .set({ status: 'busy', active_run_id: claim.runId, interrupts: '[]', updated_at: sql<Date>`now()` })
    .where('org_id', '=', claim.orgId)
    .where('id', '=', claim.id)
    .where('deployment_id', '=', claim.deploymentId);
  query = claim.interruptedOnly ? query.where('status', '=', 'interrupted') : query.where('status', '<>', 'busy');
  return query.returning(['values', latestCheckpoint(claim.id).as('checkpoint')]).executeTakeFirst();
}

/** A thread's values and latest runner checkpoint, read when its queued run starts. */
export function threadState(db: Db, id: string) {
  return db
    .selectFrom('threads')
    .select(['values', latestCheckpoint(id).as('checkpoint')])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Frees the thread of its run; on success the new values, else the values stay. */
export function releaseThread(
  db: Db,
  id: string,
  runId: string,
  change: {
    status: ThreadStatus;
    values?: { replace: Record<string, unknown> } | { merge: Record<string, unknown> };
    interrupts?: ThreadInterrupt[];
  },
) {
  const values = change.values
    ? 'replace' in change.values
      ? sql<string>`${JSON.stringify(change.values.replace)}::jsonb`
      : sql<string>`coalesce("values", '{}'::jsonb) || ${JSON.stringify(change.values.merge)}::jsonb`
    : sql<string>`"values"`;
  return db
    .updateTable('threads')
    .set({
      status: change.status,
      active_run_id: null,
      values,
      interrupts: JSON.stringify(change.interrupts ?? []),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('active_run_id', '=', runId)
    .returning(['id', 'values'])
    .executeTakeFirst();
}

export function updateThread(
  db: Db,
  orgId: string,
  id: string,
  change: { metadata?: Record<string, unknown>; values?: Record<string, unknown> | null },
) {
  return db
    .updateTable('threads')
    .set({
      updated_at: sql<Date>`now()`,
      ...(change.metadata === undefined ? {} : { metadata: JSON.stringify(change.metadata) }),
      ...(change.values === undefined ? {} : { values: change.values === null ? null : JSON.stringify(change.values) }),
    })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .returning(threadColumns)
    .executeTakeFirst();
}

export function deleteThread(db: Db, orgId: string, id: string) {
  return db
    .deleteFrom('threads')
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('status', '<>', 'busy')
    .returning('id')
    .executeTakeFirst();
}

/** Locks the thread row for a change that depends on its status. */
export function lockThread(db: Db, orgId: string, id: string) {
  return db
    .selectFrom('threads')
    .select(threadColumns)
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export function insertCheckpoint(
  db: Db,
  row: {
    id: string;
    thread_id: string;
    run_id: string | null;
    values: Record<string, unknown> | null;
    checkpoint?: unknown;
  },
) {
  const { checkpoint, ...rest } = row;
  return db
    .insertInto('thread_checkpoints')
    .values({
      ...rest,
      values: row.values === null ? null : JSON.stringify(row.values),
      checkpoint: checkpoint === undefined || checkpoint === null ? null : JSON.stringify(checkpoint),
    })
    .execute();
}

export function listCheckpoints(db: Db, threadId: string, page: { limit: number; offset: number }) {
  return db
    .selectFrom('thread_checkpoints')
    .select(['id', 'thread_id', 'run_id', 'values', 'created_at'])
    .where('thread_id', '=', threadId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}
