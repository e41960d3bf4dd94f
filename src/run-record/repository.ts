import { type RawBuilder, sql } from 'kysely';
import { compiledOnce } from '../db/compiled-once.js';
import type { RunUsage } from '../db/schema/run-usage.js';
import type { Db, Environment } from '../db/types.js';
import { launchVersionColumns } from '../deployments/launch-version.js';
import type { RunEnd } from '../events/types.js';
import { FINAL_EVENT_TYPES, type RunCommand, type RunStatus, type TerminalRunStatus } from './types.js';

export const runColumns = [
  'runs.id',
  'runs.org_id',
  'runs.deployment_id',
  'runs.version_id',
  'runs.environment',
  'runs.thread_id',
  'runs.cron_id',
  'runs.status',
  'runs.input',
  'runs.command',
  'runs.output',
  'runs.error_message',
  'runs.instance_id',
  'runs.created_at',
  'runs.started_at',
  'runs.completed_at',
  'runs.usage',
  'runs.trace_id',
  'runs.trace_parent_id',
] as const;

export interface NewRun {
  id: string;
  org_id: string;
  deployment_id: string;
  version_id: string;
  environment: Environment;
  thread_id: string | null;
  cron_id?: string | null;
  cron_due_at?: Date | null;
  status: 'pending' | 'running';
  input: Record<string, unknown>;
  command?: RunCommand | null;
  instance_id: string | null;
  created_at: Date;
  started_at: Date | null;
  trace_id?: string | null;
  trace_parent_id?: string | null;
}

export function insertRun(db: Db, run: NewRun) {
  const { command, ...rest } = run;
  return db
    .insertInto('runs')
    .values({ ...rest, input: JSON.stringify(run.input), command: command ? JSON.stringify(command) : null })
    .returning(['created_at'])
    .executeTakeFirstOrThrow();
}

/** A new run's values as the insert of a run of the running version takes them (its input as JSON text). */
type RunOfVersionValues = Omit<NewRun, 'version_id' | 'input' | 'command'> & { input: string };

function buildRunOfVersion(running: 'd.production_version_id' | 'd.staging_version_id') {
  return compiledOnce((db: Db, run: Required<RunOfVersionValues>) =>
    db
      .with('v', (qb) =>
        qb
          .selectFrom('deployments as d')
          .innerJoin('deployment_versions as ver', 'ver.id', running)
          .select(launchVersionColumns('ver'))
          .where('d.org_id', '=', run.org_id)
          .where('d.id', '=', run.deployment_id),
      )
      .with('inserted', (qb) =>
        qb
          .insertInto('runs')
          .columns([
            'id',
            'org_id',
            'deployment_id',
            'version_id',
            'environment',
            'thread_id',
            'cron_id',
            'cron_due_at',
            'status',
            'input',
            'instance_id',
            'created_at',
            'started_at',
            'trace_id',
            'trace_parent_id',
          ])
          .expression((eb) =>
            eb
              .selectFrom('v')
              .select([
                sql<string>`${run.id}::text`.as('id'),
                sql<string>`${run.org_id}::text`.as('org_id'),
                sql<string>`${run.deployment_id}::text`.as('deployment_id'),
                'v.id as version_id',
                sql<string>`${run.environment}::text`.as('environment'),
                sql<string | null>`${run.thread_id}::text`.as('thread_id'),
                sql<string | null>`${run.cron_id}::text`.as('cron_id'),
                sql<Date | null>`${run.cron_due_at}::timestamptz`.as('cron_due_at'),
                sql<string>`${run.status}::text`.as('status'),
                sql<string>`${run.input}::jsonb`.as('input'),
                sql<string | null>`${run.instance_id}::text`.as('instance_id'),
                sql<Date>`${run.created_at}::timestamptz`.as('created_at'),
                sql<Date | null>`${run.started_at}::timestamptz`.as('started_at'),
                sql<string | null>`${run.trace_id}::text`.as('trace_id'),
                sql<string | null>`${run.trace_parent_id}::text`.as('trace_parent_id'),
              ]),
          )
          .returning('id'),
      )
      .selectFrom('v')
      .selectAll('v'),
  );
}

const runOfVersion = {
  production: buildRunOfVersion('d.production_version_id'),
  staging: buildRunOfVersion('d.staging_version_id'),
};

/**
 * Inserts a run of the deployment's running version for its environment and returns that
 * version (what a runner needs); undefined, inserting nothing, when there is none. One statement,
 * compiled once (a run of a warm version sends it on every start).
 */
export async function insertRunOfRunningVersion(db: Db, run: Omit<NewRun, 'version_id'>) {
  const [version] = await runOfVersion[run.environment](db, {
    id: run.id,
    org_id: run.org_id,
    deployment_id: run.deployment_id,
    environment: run.environment,
    thread_id: run.thread_id,
    cron_id: run.cron_id ?? null,
    cron_due_at: run.cron_due_at ?? null,
    status: run.status,
    input: JSON.stringify(run.input),
    instance_id: run.instance_id,
    created_at: run.created_at,
    started_at: run.started_at,
    trace_id: run.trace_id ?? null,
    trace_parent_id: run.trace_parent_id ?? null,
  });
  return version;
}

export function findRun(db: Db, orgId: string, id: string) {
  return db.selectFrom('runs').select(runColumns).where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();
}

export type RunRecord = NonNullable<Awaited<ReturnType<typeof findRun>>>;

export function findRunById(db: Db, id: string) {
  return db.selectFrom('runs').select(runColumns).where('id', '=', id).executeTakeFirst();
}

export interface RunFilter {
  deployment_id?: string | undefined;
  thread_id?: string | undefined;
  cron_id?: string | undefined;
  status?: RunStatus | undefined;
}

function filtered(db: Db, orgId: string, filter: RunFilter) {
  let query = db.selectFrom('runs').where('org_id', '=', orgId);
  if (filter.deployment_id) query = query.where('deployment_id', '=', filter.deployment_id);
  if (filter.thread_id) query = query.where('thread_id', '=', filter.thread_id);
  if (filter.cron_id) query = query.where('cron_id', '=', filter.cron_id);
  if (filter.status) query = query.where('status', '=', filter.status);
  return query;
}

/** The run columns a light list leaves out (`fields` names none of them): the large JSON ones. */
export const heavyRunColumns = ['runs.input', 'runs.output', 'runs.usage'] as const;

export function listRuns(
  db: Db,
  orgId: string,
  filter: RunFilter,
  page: { limit: number; offset: number },
  columns: readonly (typeof runColumns)[number][] = runColumns,
) {
  return filtered(db, orgId, filter)
    .select(columns as typeof runColumns)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export async function countRuns(db: Db, orgId: string, filter: RunFilter): Promise<number> {
  const row = await filtered(db, orgId, filter)
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/**
 * Whether a pending run may start: one without a thread may; one in a thread only while it holds
 * the thread and no run the thread waits for may still have a live process (its owner clears the
 * mark once the process is gone; a lapsed lease says its owner, and so the process, is gone).
 */
const mayStart = sql<boolean>`(runs.thread_id is null or exists (
  select 1 from threads t
  where t.id = runs.thread_id and t.active_run_id = runs.id
    and (t.stopping_run_id is null or not exists (
      select 1 from instances i
      where i.id = t.stopping_instance_id and i.expires_at > now() and i.stopped_at is null))))`;

/** Whether a pending run that may start waits, of an organization not in `waitingOrganizations`; claims nothing. */
export async function pendingRunWaits(db: Db, waitingOrganizations: string[] = []): Promise<boolean> {
  const row = await db
    .selectFrom('runs')
    .select('id')
    .where('status', '=', 'pending')
    .$if(waitingOrganizations.length > 0, (query) => query.where('org_id', 'not in', waitingOrganizations))
    .where(mayStart)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Claims the oldest pending run that may start for this instance, of an organization not in
 * `waitingOrganizations` (those holding their share of the slots); skips rows another instance is claiming.
 */
export function claimNextPending(db: Db, instanceId: string, waitingOrganizations: string[] = []) {
  return db
    .updateTable('runs')
    .set({ status: 'running', instance_id: instanceId, started_at: sql<Date>`now()` })
    .where('id', '=', (eb) =>
      eb
        .selectFrom('runs')
        .select('id')
        .where('status', '=', 'pending')
        .$if(waitingOrganizations.length > 0, (query) => query.where('org_id', 'not in', waitingOrganizations))
        .where(mayStart)
        .orderBy('created_at')
        .orderBy('id')
        .limit(1)
        .forUpdate()
        .skipLocked(),
    )
    .where('status', '=', 'pending')
    .returning(runColumns)
    .executeTakeFirst();
}

/** How many organizations there are, counting no further than `limit`. */
export async function organizationsUpTo(db: Db, limit: number): Promise<number> {
  const rows = await db.selectFrom('organizations').select('id').limit(limit).execute();
  return rows.length;
}

export function findVersionForRun(db: Db, versionId: string) {
  return db
    .selectFrom('deployment_versions as ver')
    .select(launchVersionColumns('ver'))
    .where('ver.id', '=', versionId)
    .executeTakeFirst();
}

/** Which of these runs are no longer running (ended by another instance, a cancel made there, or deleted). */
export async function findEndedAmong(db: Db, ids: string[]): Promise<string[]> {
  const rows = await db
    .selectFrom('runs')
    .select('id')
    .where('id', 'in', ids)
    .where('status', '=', 'running')
    .execute();
  const running = new Set(rows.map((row) => row.id));
  return ids.filter((id) => !running.has(id));
}

/** A running run's usage so far (its calls arrive while it runs; its end writes the final sum). */
export function updateRunningUsage(db: Db, id: string, usage: RunUsage) {
  return db
    .updateTable('runs')
    .set({ usage: JSON.stringify(usage) })
    .where('id', '=', id)
    .where('status', '=', 'running')
    .execute();
}

/**
 * Locks a run's row for its end (`select … for update`): a batch of its owner's log under way (it share-locks
 * the row) commits first, and none commits after until the end's transaction does.
 */
export async function lockRun(db: Db, id: string): Promise<void> {
  await db.selectFrom('runs').select('id').where('id', '=', id).forUpdate().execute();
}

/** Deletes a run with its events (a rolled-back run). */
export function deleteRun(db: Db, id: string) {
  return db.deleteFrom('runs').where('id', '=', id).execute();
}

// Events

export interface EventRow {
  run_id: string;
  seq: number;
  type: string;
  data: string;
}

/** One event as a tuple of `eventValues`: its number, type and data (JSON text), typed. */
export const eventTuple = (seq: RawBuilder<unknown> | number, type: string, data: string) =>
  sql`(${typeof seq === 'number' ? sql`${seq}::integer` : seq}, ${type}::text, ${data}::jsonb)`;

/** Event tuples as a `values` list named `v(seq, type, data)`, for an insert to select from. */
export const eventValues = (tuples: ReadonlyArray<RawBuilder<unknown>>) =>
  sql<{ seq: number; type: string; data: string }>`(values ${sql.join(tuples)})`.as<'v'>(sql`v(seq, type, data)`);

/** A number already taken means the run was ended elsewhere meanwhile; such late events are dropped. */
export function insertEvents(db: Db, rows: EventRow[]) {
  return db
    .insertInto('run_events')
    .values(rows)
    .onConflict((oc) => oc.columns(['run_id', 'seq']).doNothing())
    .execute();
}

/**
 * Events of a running run from its owner's event log, stored only while the run is running: the
 * insert share-locks the run's row, so an end (which updates that row) waits for an insert under
 * way, and an insert after an end stores nothing (the end's event stays last). Answers how many
 * rows were stored; none when the run has ended.
 */
export async function insertEventsWhileRunning(db: Db, rows: EventRow[]): Promise<number> {
  const runId = rows[0]?.run_id;
  if (runId === undefined) return 0;
  const values = eventValues(rows.map((row) => eventTuple(row.seq, row.type, row.data)));
  const result = await db
    .with('running', (qb) =>
      qb.selectFrom('runs').select('id').where('id', '=', runId).where('status', '=', 'running').forShare(),
    )
    .insertInto('run_events')
    .columns(['run_id', 'seq', 'type', 'data'])
    .expression((eb) => eb.selectFrom(['running', values]).select(['running.id', 'v.seq', 'v.type', 'v.data']))
    .onConflict((oc) => oc.columns(['run_id', 'seq']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n);
}

export function listEventsAfter(db: Db, runId: string, afterSeq: number, limit: number) {
  return db
    .selectFrom('run_events')
    .select(['seq', 'type', 'data'])
    .where('run_id', '=', runId)
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(limit)
    .execute();
}

/** The final event stored with the run's end (its last stored event, when that is one), as streams send it. */
export async function storedFinalEvent(db: Db, runId: string): Promise<{ seq: number; json: string } | undefined> {
  const last = await db
    .selectFrom('run_events')
    .select(['seq', 'type', 'data'])
    .where('run_id', '=', runId)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!last || !FINAL_EVENT_TYPES.includes(last.type)) return undefined;
  return { seq: last.seq, json: JSON.stringify({ type: last.type, data: last.data }) };
}

/** How an ended run's row says it ended, as its final event carries it to streams. */
export const endOfRun = (row: Pick<RunRecord, 'status' | 'output' | 'error_message'>): RunEnd => ({
  status: row.status as TerminalRunStatus,
  output: row.status === 'succeeded' ? (row.output ?? {}) : null,
  error: row.status === 'failed' ? row.error_message : null,
});

/** Runs now pending or running, by status, across all instances (for metrics). */
export function countActiveRuns(db: Db) {
  return db
    .selectFrom('runs')
    .select(['status', (eb) => eb.fn.countAll<number>().as('count')])
    .where('status', 'in', ['pending', 'running'])
    .groupBy('status')
    .execute();
}
