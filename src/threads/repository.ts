import { sql } from 'kysely';
import type { ThreadInterrupt } from '../db/columns.js';
import type { ThreadStatus } from '../db/schema/threads.js';
import type { Db } from '../db/types.js';

const threadColumns = [
  'id',
  'org_id',
  'deployment_id',
  'status',
  'metadata',
  'values',
  'active_run_id',
  'interrupts',
  'stopping_run_id',
  'stopping_instance_id',
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

/** Makes the thread busy with a run, clearing its interrupts; what its runner starts from is returned. */
export function holdThread(db: Db, id: string, runId: string, stopping?: { runId: string; instanceId: string | null }) {
  return db
    .updateTable('threads')
    .set({
      status: 'busy',
      active_run_id: runId,
      interrupts: '[]',
      updated_at: sql<Date>`now()`,
      ...(stopping ? { stopping_run_id: stopping.runId, stopping_instance_id: stopping.instanceId } : {}),
    })
    .where('id', '=', id)
    .returning(['values', latestCheckpoint(id).as('checkpoint')])
    .executeTakeFirstOrThrow();
}

/** Whether the process of a run the thread waits for may still be alive: its owner is alive and has not cleared it. */
export async function stoppingProcessAlive(
  db: Db,
  thread: { stopping_run_id: string | null; stopping_instance_id: string | null },
) {
  if (!thread.stopping_run_id || !thread.stopping_instance_id) return false;
  const owner = await db
    .selectFrom('instances')
    .select('id')
    .where('id', '=', thread.stopping_instance_id)
    .where('expires_at', '>', sql<Date>`now()`)
    .where('stopped_at', 'is', null)
    .executeTakeFirst();
  return owner !== undefined;
}

/** The run's process is gone: the thread's next run may start. The thread that waited for it, if one did. */
export async function clearStoppingRun(db: Db, runId: string): Promise<string | null> {
  const cleared = await db
    .updateTable('threads')
    .set({ stopping_run_id: null, stopping_instance_id: null })
    .where('stopping_run_id', '=', runId)
    .returning('id')
    .executeTakeFirst();
  return cleared?.id ?? null;
}

/** Locks the thread of a run (if it has one) before the run's end touches the run's row: threads, then runs. */
export async function lockThreadOfRun(db: Db, runId: string): Promise<void> {
  await db
    .selectFrom('threads')
    .select('id')
    .where('id', '=', (eb) => eb.selectFrom('runs').select('thread_id').where('runs.id', '=', runId))
    .forUpdate()
    .execute();
}

/** Locks a run of a thread, read after the lock (so its status is the latest committed). */
export function lockRun(db: Db, runId: string) {
  return db
    .selectFrom('runs')
    .select(['id', 'status', 'instance_id'])
    .where('id', '=', runId)
    .forUpdate()
    .executeTakeFirst();
}

/** Locks the thread row if the run holds it (the run's end gives it back); undefined otherwise. */
export function lockThreadHeldBy(db: Db, id: string, runId: string) {
  return db
    .selectFrom('threads')
    .select(['id'])
    .where('id', '=', id)
    .where('active_run_id', '=', runId)
    .forUpdate()
    .executeTakeFirst();
}

/** The oldest queued run of the thread (the next to take it), read in its own statement after the thread's lock. */
export function nextQueuedRun(db: Db, threadId: string) {
  return db
    .selectFrom('runs')
    .select('id')
    .where('thread_id', '=', threadId)
    .where('status', '=', 'pending')
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
}

/** The thread's pending runs (its queue, and a holder waiting for a slot). */
export async function pendingRunIds(db: Db, threadId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('runs')
    .select('id')
    .where('thread_id', '=', threadId)
    .where('status', '=', 'pending')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => row.id);
}

/** Frees a thread of its run without ending anything (a thread about to be deleted). */
export function detachActiveRun(db: Db, id: string) {
  return db.updateTable('threads').set({ active_run_id: null }).where('id', '=', id).execute();
}

/** Checkpoints written by a run (rollback removes them with it). */
export function deleteCheckpointsOfRun(db: Db, threadId: string, runId: string) {
  return db.deleteFrom('thread_checkpoints').where('thread_id', '=', threadId).where('run_id', '=', runId).execute();
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

export function deleteThread(db: Db, id: string) {
  return db.deleteFrom('threads').where('id', '=', id).execute();
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

/** Binds a thread made without a deployment (LangGraph API) to its first run's. */
export async function bindThreadDeployment(db: Db, id: string, deploymentId: string): Promise<void> {
  await db.updateTable('threads').set({ deployment_id: deploymentId }).where('id', '=', id).execute();
}
