import { type Kysely, sql, type Transaction, type Updateable } from 'kysely';
import type { CronsTable, MultitaskStrategy } from '../db/schema/crons.js';
import type { Database, Environment } from '../db/types.js';

type Db = Kysely<Database> | Transaction<Database>;

const cronColumns = [
  'id',
  'org_id',
  'deployment_id',
  'schedule',
  'timezone',
  'input',
  'environment',
  'thread_id',
  'multitask_strategy',
  'enabled',
  'next_run_at',
  'last_run_at',
  'last_run_id',
  'last_error',
  'created_at',
  'updated_at',
] as const;

export interface NewCron {
  id: string;
  org_id: string;
  deployment_id: string;
  schedule: string;
  timezone: string;
  input: Record<string, unknown>;
  environment: Environment;
  thread_id: string | null;
  multitask_strategy: MultitaskStrategy;
  enabled: boolean;
  next_run_at: Date | null;
}

/** The organization's crons, counted with its row locked until the transaction ends. */
export async function countCronsLocking(trx: Transaction<Database>, orgId: string): Promise<number> {
  await trx.selectFrom('organizations').select('id').where('id', '=', orgId).forUpdate().execute();
  const row = await trx
    .selectFrom('crons')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('org_id', '=', orgId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export function insertCron(db: Db, cron: NewCron) {
  return db
    .insertInto('crons')
    .values({ ...cron, input: JSON.stringify(cron.input) })
    .returning(cronColumns)
    .executeTakeFirstOrThrow();
}

export function findCron(db: Db, orgId: string, id: string) {
  return db.selectFrom('crons').select(cronColumns).where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();
}

export type CronRecord = NonNullable<Awaited<ReturnType<typeof findCron>>>;

/** The cron, locked until the transaction ends, so a change is computed from what it replaces. */
export function findCronForUpdate(trx: Transaction<Database>, orgId: string, id: string) {
  return trx
    .selectFrom('crons')
    .select(cronColumns)
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export function listCrons(
  db: Db,
  orgId: string,
  deploymentId: string | undefined,
  page: { limit: number; offset: number },
) {
  let query = db.selectFrom('crons').select(cronColumns).where('org_id', '=', orgId);
  if (deploymentId) query = query.where('deployment_id', '=', deploymentId);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
}

export type CronChanges = Omit<Updateable<CronsTable>, 'input'> & { input?: Record<string, unknown> };

export function updateCron(trx: Transaction<Database>, id: string, changes: CronChanges) {
  const { input, ...rest } = changes;
  return trx
    .updateTable('crons')
    .set({ ...rest, ...(input === undefined ? {} : { input: JSON.stringify(input) }), updated_at: sql`now()` })
    .where('id', '=', id)
    .returning(cronColumns)
    .executeTakeFirstOrThrow();
}

export async function deleteCron(db: Db, orgId: string, id: string): Promise<boolean> {
  const deleted = await db
    .deleteFrom('crons')
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
  return deleted !== undefined;
}

export function findThreadDeployment(db: Db, orgId: string, threadId: string) {
  return db
    .selectFrom('threads')
    .select('deployment_id')
    .where('org_id', '=', orgId)
    .where('id', '=', threadId)
    .executeTakeFirst();
}

// The scheduler

/**
 * Claims up to `limit` crons due by `dueBy` for this instance until `until`, skipping rows another
 * instance is claiming and crons whose claim has not lapsed. Returns what a run needs, the due time,
 * and the lapsed claim taken over, if any (its instance may have started the run before it died).
 */
export function claimDueCrons(db: Db, claim: { now: Date; dueBy: Date; until: Date; limit: number }) {
  return db
    .with('due', (qb) =>
      qb
        .selectFrom('crons')
        .select(['id', 'claimed_until as lapsed_claim'])
        .where('next_run_at', '<=', claim.dueBy)
        .where((w) => w.or([w('claimed_until', 'is', null), w('claimed_until', '<=', claim.now)]))
        .orderBy('next_run_at')
        .limit(claim.limit)
        .forUpdate()
        .skipLocked(),
    )
    .updateTable('crons')
    .from('due')
    .set({ claimed_until: claim.until })
    .whereRef('crons.id', '=', 'due.id')
    .where('crons.next_run_at', '<=', claim.dueBy)
    .returning([
      'crons.id',
      'crons.org_id',
      'crons.deployment_id',
      'crons.schedule',
      'crons.timezone',
      'crons.input',
      'crons.environment',
      'crons.thread_id',
      'crons.multitask_strategy',
      'crons.next_run_at as due_at',
      'due.lapsed_claim',
    ])
    .execute();
}

/** The run a cron started for a due time, if it started one. */
export function findRunOfDueTime(db: Db, cronId: string, dueAt: Date) {
  return db
    .selectFrom('runs')
    .select('id')
    .where('cron_id', '=', cronId)
    .where('cron_due_at', '=', dueAt)
    .executeTakeFirst();
}

export type ClaimedCron = Awaited<ReturnType<typeof claimDueCrons>>[number];

/**
 * Ends a claim, if it is still this one (`claim` is the `claimed_until` it set; an instance that
 * took it over after it lapsed records instead): moves the next time on (unless a change meanwhile
 * set another) and records the run started, or the error that kept it from starting.
 */
export function recordFiring(
  db: Db,
  firing: {
    id: string;
    claim: Date;
    dueAt: Date;
    nextAt: Date | null;
    outcome: { runId: string; at: Date } | { error: string };
  },
) {
  const { outcome } = firing;
  return db
    .updateTable('crons')
    .set((eb) => ({
      claimed_until: null,
      next_run_at: eb
        .case()
        .when('next_run_at', '=', firing.dueAt)
        .then(firing.nextAt)
        .else(eb.ref('next_run_at'))
        .end(),
      ...('runId' in outcome
        ? { last_run_at: outcome.at, last_run_id: outcome.runId, last_error: null }
        : { last_error: outcome.error }),
    }))
    .where('id', '=', firing.id)
    .where('claimed_until', '=', firing.claim)
    .execute();
}

/** Shortens the claim, if still this one, so the due time is tried again at `at` (its run did not start for a passing reason). */
export function retryClaimAt(db: Db, id: string, claim: Date, at: Date) {
  return db
    .updateTable('crons')
    .set({ claimed_until: at })
    .where('id', '=', id)
    .where('claimed_until', '=', claim)
    .execute();
}

/** The earliest time a cron not claimed now falls due, if any. */
export async function earliestDue(db: Db, now: Date): Promise<Date | null> {
  const row = await db
    .selectFrom('crons')
    .select((eb) => eb.fn.min('next_run_at').as('earliest'))
    .where('next_run_at', 'is not', null)
    .where((w) => w.or([w('claimed_until', 'is', null), w('claimed_until', '<=', now)]))
    .executeTakeFirst();
  const earliest = row?.earliest as Date | string | null | undefined;
  return earliest ? new Date(earliest) : null;
}
