import { type RawBuilder, sql } from 'kysely';
import type { WebhookEvent } from '../db/schema/webhooks.js';
import type { Db, Environment } from '../db/types.js';
import { isStateUpdateRun } from '../langgraph-api/state-update-runs.js';

type Page = { limit: number; offset: number };

/** Everything but the secret: a row read for a reply never carries it. */
const webhookColumns = [
  'id',
  'deployment_id',
  'name',
  'url',
  'events',
  'environment',
  'enabled',
  'created_at',
  'updated_at',
] as const;

export function insertWebhook(
  db: Db,
  row: {
    id: string;
    org_id: string;
    deployment_id: string;
    name: string;
    url: string;
    events: WebhookEvent[];
    environment: Environment;
    enabled: boolean;
    secret: string;
  },
) {
  return db
    .insertInto('webhooks')
    .values({ ...row, events: JSON.stringify(row.events) })
    .returning(webhookColumns)
    .executeTakeFirstOrThrow();
}

export function findWebhook(db: Db, orgId: string, id: string) {
  return db
    .selectFrom('webhooks')
    .select(webhookColumns)
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export type WebhookRecord = NonNullable<Awaited<ReturnType<typeof findWebhook>>>;

export function listWebhooks(db: Db, orgId: string, deploymentId: string | undefined, page: Page) {
  let query = db.selectFrom('webhooks').select(webhookColumns).where('org_id', '=', orgId);
  if (deploymentId !== undefined) query = query.where('deployment_id', '=', deploymentId);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
}

export function updateWebhook(
  db: Db,
  orgId: string,
  id: string,
  changes: Partial<{
    name: string;
    url: string;
    events: WebhookEvent[];
    environment: Environment;
    enabled: boolean;
    secret: string;
  }>,
) {
  const { events, ...rest } = changes;
  return db
    .updateTable('webhooks')
    .set({ ...rest, ...(events ? { events: JSON.stringify(events) } : {}), updated_at: new Date() })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .returning(webhookColumns)
    .executeTakeFirst();
}

export async function deploymentHasWebhooks(db: Db, deploymentId: string): Promise<boolean> {
  const row = await db
    .selectFrom('webhooks')
    .select('id')
    .where('deployment_id', '=', deploymentId)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export async function deleteWebhook(db: Db, orgId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('webhooks').where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export function disableWebhook(db: Db, id: string) {
  return db.updateTable('webhooks').set({ enabled: false, updated_at: new Date() }).where('id', '=', id).execute();
}

const deliveryColumns = [
  'id',
  'webhook_id',
  'event',
  'run_id',
  'status',
  'attempts',
  'response_status',
  'error_message',
  'created_at',
  'last_attempt_at',
  'next_attempt_at',
] as const;

/** A timestamp as JavaScript's toISOString writes it (UTC, milliseconds). */
const isoText = (column: RawBuilder<unknown>) =>
  sql`to_json(to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text`;

/**
 * A run's deliveries as a part of the statement that ends it (RunEndHook.joinEnd): the CTE
 * `webhook_deliveries_ended` reads the CTE `ended` and inserts a delivery per enabled webhook of
 * the run's deployment + environment that wants the event (none for a state update's run, which no user started:
 * every way a run ends writes its deliveries here), each body built from `pieces` around
 * the ended row's deployment id and times. Ids come from `ids`, one per target; targets beyond them
 * get a random id made in SQL. With a `lease` the rows are held for its holder (the instance that
 * sends them after commit). `result` is what sending needs, as a JSON array.
 */
export function runDeliveriesInEnd(input: {
  event: WebhookEvent;
  pieces: { head: string; middle: string; tail: string };
  ids: string[];
  lease: { token: string; seconds: number } | null;
}) {
  const leaseToken = input.lease?.token ?? null;
  const leaseSeconds = input.lease?.seconds ?? 0;
  const { head, middle, tail } = input.pieces;
  const insert = sql`
    insert into webhook_deliveries
      (id, webhook_id, event, run_id, payload, status, next_attempt_at, lease_token, lease_until)
    select
      coalesce((string_to_array(${input.ids.join(',')}, ','))[t.n], 'dlv_' || replace(gen_random_uuid()::text, '-', '')),
      t.id, ${input.event}, e.id,
      ${head}::text || to_json(e.deployment_id)::text || ${middle}::text
        || coalesce(${isoText(sql.ref('e.started_at'))}, 'null') || ${tail}::text
        || ${isoText(sql.ref('e.completed_at'))} || '}}',
      'pending', now(),
      ${leaseToken}::text,
      case when ${leaseToken}::text is null then null else now() + make_interval(secs => ${leaseSeconds}) end
    from ended e
    join lateral (
      select w.id, row_number() over (order by w.id) as n
      from webhooks w
      where w.deployment_id = e.deployment_id
        and w.environment = e.environment
        and w.enabled
        and w.events @> ${JSON.stringify([input.event])}::jsonb
    ) t on true
    where not ${isStateUpdateRun(sql.ref('e.id'))}
    returning id, webhook_id, payload`;
  const result = sql`(
    select coalesce(json_agg(json_build_object(
      'id', d.id, 'webhook_id', d.webhook_id, 'org_id', w.org_id, 'payload', d.payload, 'url', w.url,
      'secret', w.secret)), '[]'::json)
    from webhook_deliveries_ended d join webhooks w on w.id = d.webhook_id)`;
  return { ctes: [['webhook_deliveries_ended', insert]] as const, result };
}

export function listDeliveries(db: Db, webhookId: string, page: Page) {
  return db
    .selectFrom('webhook_deliveries')
    .select(deliveryColumns)
    .where('webhook_id', '=', webhookId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export function findDelivery(db: Db, webhookId: string, id: string) {
  return db
    .selectFrom('webhook_deliveries')
    .select(deliveryColumns)
    .where('webhook_id', '=', webhookId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function findDeliveryPayload(db: Db, id: string): Promise<string | undefined> {
  const row = await db.selectFrom('webhook_deliveries').select('payload').where('id', '=', id).executeTakeFirst();
  return row?.payload;
}

export type DeliveryRecord = NonNullable<Awaited<ReturnType<typeof findDelivery>>>;

export function listAttempts(db: Db, deliveryId: string) {
  return db
    .selectFrom('webhook_delivery_attempts')
    .select(['number', 'attempted_at', 'duration_ms', 'response_status', 'error_message'])
    .where('delivery_id', '=', deliveryId)
    .orderBy('number', 'asc')
    .execute();
}

/**
 * Makes a delivery due now with a fresh retry schedule. A delivery being sent right now
 * (an unexpired lease) is left to that attempt.
 */
export async function requeueDelivery(db: Db, webhookId: string, id: string): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', cycle_attempts: 0, next_attempt_at: sql<Date>`now()` })
    .where('webhook_id', '=', webhookId)
    .where('id', '=', id)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', sql<Date>`now()`)]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** What a look may claim: up to `limit` deliveries, and of each organization its `share` less what it `holds`. */
export interface ClaimRoom {
  limit: number;
  share: number;
  /** Deliveries in flight here, by organization. */
  holds: ReadonlyMap<string, number>;
}

const leaseFree = sql<boolean>`(lease_until is null or lease_until < now())`;

/** Whether a claim of `room.limit` could take an organization past its share (never with one organization). */
function reachesAnyShare(room: ClaimRoom): boolean {
  return Math.max(0, ...room.holds.values()) + room.limit > room.share;
}

/** The oldest due deliveries, each organization's up to its share less what it holds (reads every due one). */
function dueWithinShares(room: ClaimRoom) {
  const holds = JSON.stringify(Object.fromEntries(room.holds));
  return sql`
    select c.id from (
      select d.id, d.next_attempt_at, w.org_id,
        row_number() over (partition by w.org_id order by d.next_attempt_at, d.id) as n
      from webhook_deliveries d join webhooks w on w.id = d.webhook_id
      where d.status = 'pending' and d.next_attempt_at <= now()
        and (d.lease_until is null or d.lease_until < now())
    ) c
    where c.n <= ${room.share} - coalesce((${holds}::jsonb ->> c.org_id)::int, 0)
    order by c.next_attempt_at
    limit ${room.limit}`;
}

/**
 * Leases due deliveries, oldest first, within `room` (each organization's oldest up to what its share leaves), with
 * what sending needs (the webhook's current URL and secret). SKIP LOCKED keeps two instances from taking the same one.
 */
export function claimDue(db: Db, room: ClaimRoom, leaseToken: string, leaseSeconds: number) {
  const due = db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', sql<Date>`now()`)
    .where(leaseFree);
  // With room for no organization to pass its share (one organization), the oldest due: an index scan to `limit`.
  const claimable = reachesAnyShare(room)
    ? due.where(sql<boolean>`id in (${dueWithinShares(room)})`)
    : due.orderBy('next_attempt_at').limit(room.limit);
  return db
    .updateTable('webhook_deliveries as d')
    .from('webhooks as w')
    .set({ lease_token: leaseToken, lease_until: sql<Date>`now() + make_interval(secs => ${leaseSeconds})` })
    .whereRef('w.id', '=', 'd.webhook_id')
    .where('d.id', 'in', claimable.forUpdate().skipLocked())
    .returning([
      'd.id',
      'd.webhook_id',
      'w.org_id',
      'd.event',
      'd.payload',
      'd.attempts',
      'd.cycle_attempts',
      'w.url',
      'w.secret',
      'w.enabled',
    ])
    .execute();
}

export type ClaimedDelivery = Awaited<ReturnType<typeof claimDue>>[number];

/**
 * Seconds until the next pending delivery is due (0 when one is due now), or null when none waits; those of the
 * organizations in `passedOver` (holding their share) are left out: one of their own attempts ending looks again.
 */
export async function secondsUntilNextDue(db: Db, passedOver: readonly string[] = []): Promise<number | null> {
  let query = db
    .selectFrom('webhook_deliveries as d')
    .select(sql<number | null>`extract(epoch from min(greatest(d.next_attempt_at, d.lease_until)) - now())`.as('wait'))
    .where('d.status', '=', 'pending');
  if (passedOver.length > 0) {
    query = query.where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('webhooks as w')
            .select('w.id')
            .whereRef('w.id', '=', 'd.webhook_id')
            .where('w.org_id', 'in', passedOver),
        ),
      ),
    );
  }
  const row = await query.executeTakeFirst();
  const wait = row?.wait;
  return wait === null || wait === undefined ? null : Math.max(0, Number(wait));
}

export interface AttemptOutcome {
  status: 'pending' | 'succeeded' | 'failed';
  responseStatus: number | null;
  errorMessage: string | null;
  attemptedAt: Date;
  durationMs: number;
  /** Seconds from now to the next attempt, when status is pending. */
  retryInSeconds: number | null;
}

/** Records one attempt; only the holder of the lease may, so an expired-and-retaken lease writes nothing. */
export async function recordAttempt(
  db: Db,
  delivery: ClaimedDelivery,
  leaseToken: string,
  outcome: AttemptOutcome,
): Promise<boolean> {
  const updated = await db
    .updateTable('webhook_deliveries')
    .set({
      status: outcome.status,
      attempts: delivery.attempts + 1,
      cycle_attempts: delivery.cycle_attempts + 1,
      response_status: outcome.responseStatus,
      error_message: outcome.errorMessage,
      last_attempt_at: outcome.attemptedAt,
      next_attempt_at:
        outcome.retryInSeconds === null ? null : sql<Date>`now() + make_interval(secs => ${outcome.retryInSeconds})`,
      lease_token: null,
      lease_until: null,
    })
    .where('id', '=', delivery.id)
    .where('lease_token', '=', leaseToken)
    .executeTakeFirst();
  if (updated.numUpdatedRows === 0n) return false;
  await db
    .insertInto('webhook_delivery_attempts')
    .values({
      delivery_id: delivery.id,
      number: delivery.attempts + 1,
      attempted_at: outcome.attemptedAt,
      duration_ms: outcome.durationMs,
      response_status: outcome.responseStatus,
      error_message: outcome.errorMessage,
    })
    .execute();
  return true;
}

/** Ends a delivery without an attempt (its webhook is gone or disabled). */
export function closeWithoutAttempt(db: Db, id: string, leaseToken: string, errorMessage: string) {
  return db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', error_message: errorMessage, next_attempt_at: null, lease_token: null, lease_until: null })
    .where('id', '=', id)
    .where('lease_token', '=', leaseToken)
    .execute();
}

/** Gives a lease back untouched (shutdown mid-attempt), so another instance or a restart resumes at once. */
export function releaseLease(db: Db, id: string, leaseToken: string) {
  return db
    .updateTable('webhook_deliveries')
    .set({ lease_token: null, lease_until: null })
    .where('id', '=', id)
    .where('lease_token', '=', leaseToken)
    .execute();
}
