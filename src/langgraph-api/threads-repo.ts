import { sql } from 'kysely';
import type { ThreadInterrupt } from '../db/columns.js';
import type { ThreadStatus } from '../db/schema/threads.js';
import type { Db } from '../db/types.js';

export const threadColumns = [
  'id',
  'deployment_id',
  'status',
  'metadata',
  'values',
  'interrupts',
  'created_at',
  'updated_at',
] as const;

export function findThread(db: Db, orgId: string, id: string) {
  return db
    .selectFrom('threads')
    .select(threadColumns)
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export type ThreadRow = NonNullable<Awaited<ReturnType<typeof findThread>>>;

/** The run that holds the thread now (running, or pending for a slot), if any. */
export async function activeRunId(db: Db, orgId: string, id: string): Promise<string | null> {
  const row = await db
    .selectFrom('threads')
    .select('active_run_id')
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.active_run_id ?? null;
}

/** A thread of no deployment yet: its first run binds it (CONTRACTS §14). */
export function insertThread(
  db: Db,
  row: { id: string; org_id: string; metadata: Record<string, unknown>; values?: Record<string, unknown> | null },
) {
  return db
    .insertInto('threads')
    .values({
      id: row.id,
      org_id: row.org_id,
      deployment_id: null,
      status: 'idle',
      metadata: JSON.stringify(row.metadata),
      values: row.values ? JSON.stringify(row.values) : null,
    })
    .returning(threadColumns)
    .executeTakeFirstOrThrow();
}

export interface ThreadFilter {
  ids?: string[] | undefined;
  metadata?: Record<string, unknown> | undefined;
  values?: Record<string, unknown> | undefined;
  status?: ThreadStatus | undefined;
}

function filtered(db: Db, orgId: string, filter: ThreadFilter) {
  let query = db.selectFrom('threads').where('org_id', '=', orgId);
  if (filter.ids) query = query.where('id', 'in', filter.ids.length > 0 ? filter.ids : ['']);
  if (filter.metadata) query = query.where(sql<boolean>`metadata @> ${JSON.stringify(filter.metadata)}::jsonb`);
  if (filter.values) query = query.where(sql<boolean>`"values" @> ${JSON.stringify(filter.values)}::jsonb`);
  if (filter.status) query = query.where('status', '=', filter.status);
  return query;
}

export type ThreadSort = 'thread_id' | 'status' | 'created_at' | 'updated_at';

export function searchThreads(
  db: Db,
  orgId: string,
  filter: ThreadFilter,
  order: { by: ThreadSort; direction: 'asc' | 'desc' },
  page: { limit: number; offset: number },
) {
  const column = order.by === 'thread_id' ? 'id' : order.by;
  return filtered(db, orgId, filter)
    .select(threadColumns)
    .orderBy(column, order.direction)
    .orderBy('id', order.direction)
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export async function countThreads(db: Db, orgId: string, filter: ThreadFilter): Promise<number> {
  const row = await filtered(db, orgId, filter)
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Merges `metadata` into the thread's (as the official server's PATCH does). */
export function mergeMetadata(db: Db, orgId: string, id: string, metadata: Record<string, unknown>) {
  return db
    .updateTable('threads')
    .set({
      metadata: sql`metadata || ${JSON.stringify(metadata)}::jsonb`,
      updated_at: sql`clock_timestamp()`,
    })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .returning(threadColumns)
    .executeTakeFirst();
}

/**
 * Marks the thread with the graph and assistant of a run started on it, as the official server does
 * (`metadata.graph_id` is the deployment's name): apps list a graph's threads by searching for them
 * (`threads.search(metadata={"graph_id": …})`). Writes nothing when the thread already says so.
 */
export async function markRunAssistant(
  db: Db,
  orgId: string,
  id: string,
  run: { deploymentId: string; assistantId: string },
): Promise<void> {
  const marks = sql`jsonb_build_object('graph_id', (select name from deployments where id = ${run.deploymentId}), 'assistant_id', ${run.assistantId}::text)`;
  await db
    .updateTable('threads')
    .set({ metadata: sql`metadata || ${marks}` })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where(sql<boolean>`not (metadata @> ${marks})`)
    .execute();
}

const checkpointColumns = ['id', 'thread_id', 'run_id', 'values', 'created_at'] as const;

/** The thread's checkpoints, newest first, with whether each holds the runner's own (LangGraph) checkpoint. */
export function listCheckpoints(db: Db, threadId: string, options: { limit: number; before?: Date | undefined }) {
  let query = db
    .selectFrom('thread_checkpoints')
    .select(checkpointColumns)
    .select(sql<boolean>`checkpoint is not null`.as('has_runner_checkpoint'))
    .where('thread_id', '=', threadId);
  if (options.before) query = query.where('created_at', '<', options.before);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(options.limit).execute();
}

export type CheckpointRow = Awaited<ReturnType<typeof listCheckpoints>>[number];

export function findCheckpoint(db: Db, threadId: string, id: string) {
  return db
    .selectFrom('thread_checkpoints')
    .select(checkpointColumns)
    .select(sql<boolean>`checkpoint is not null`.as('has_runner_checkpoint'))
    .where('thread_id', '=', threadId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The runner's own checkpoint kept with one of crewd's (LangGraph's, for a graph), or null. */
export async function runnerCheckpoint(db: Db, id: string): Promise<unknown> {
  const row = await db.selectFrom('thread_checkpoints').select(['checkpoint']).where('id', '=', id).executeTakeFirst();
  return row?.checkpoint ?? null;
}

/** The interrupts a run stopped at (its output is `{interrupts}` alone then, CONTRACTS §9), else none. */
export async function interruptsOfRun(db: Db, runId: string): Promise<ThreadInterrupt[]> {
  const row = await db.selectFrom('runs').select(['status', 'output']).where('id', '=', runId).executeTakeFirst();
  const output = row?.status === 'succeeded' ? (row.output as Record<string, unknown> | null) : null;
  if (!output || Object.keys(output).length !== 1 || !Array.isArray(output.interrupts)) return [];
  return (output.interrupts as unknown[]).filter(
    (item): item is ThreadInterrupt => typeof item === 'object' && item !== null && 'value' in item,
  );
}

/** The newest checkpoint older than `row` (its parent). */
export function parentCheckpoint(db: Db, row: { thread_id: string; created_at: Date; id: string }) {
  return db
    .selectFrom('thread_checkpoints')
    .select(['id'])
    .where('thread_id', '=', row.thread_id)
    .where((eb) =>
      eb.or([
        eb('created_at', '<', row.created_at),
        eb.and([eb('created_at', '=', row.created_at), eb('id', '<', row.id)]),
      ]),
    )
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Copies a thread (values, metadata, checkpoints) to a new id; its runs stay with the original. */
export async function copyThread(db: Db, orgId: string, from: ThreadRow, toId: string) {
  const copy = await db
    .insertInto('threads')
    .values({
      id: toId,
      org_id: orgId,
      deployment_id: from.deployment_id,
      status: from.status === 'busy' ? 'idle' : from.status,
      metadata: JSON.stringify(from.metadata),
      values: from.values === null ? null : JSON.stringify(from.values),
      interrupts: JSON.stringify(from.interrupts),
    })
    .returning(threadColumns)
    .executeTakeFirstOrThrow();
  await sql`insert into thread_checkpoints (id, thread_id, run_id, "values", checkpoint, created_at)
    select 'chk_' || substr(md5(random()::text || id), 1, 24), ${toId}, null, "values", checkpoint, created_at
    from thread_checkpoints where thread_id = ${from.id}`.execute(db);
  return copy;
}

/**
 * Gives a thread back the status and interrupts it had before a state update whose run failed (LangGraph refused the
 * update): that run's end made it `error` without its interrupts, where the official server leaves a thread as it was.
 * Only while nothing else took the thread since: no run holds it and the failed update is its newest run.
 */
export async function restoreAfterRefusedUpdate(db: Db, before: ThreadRow, updateRunId: string): Promise<void> {
  const newestRun = sql<string>`(select r.id from runs r where r.thread_id = ${before.id}
    order by r.created_at desc, r.id desc limit 1)`;
  await db
    .updateTable('threads')
    .set({ status: before.status, interrupts: JSON.stringify(before.interrupts ?? []) })
    .where('id', '=', before.id)
    .where('active_run_id', 'is', null)
    .where('status', '=', 'error')
    .where(newestRun, '=', updateRunId)
    .execute();
}
