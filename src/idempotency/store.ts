import { createHash } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import type { Database, Db } from '../db/types.js';
import { conflict } from '../errors.js';

/** How long a key answers with its first response (CONTRACTS §4). */
export const IDEMPOTENCY_WINDOW_HOURS = 24;

export interface IdempotencyRef {
  orgId: string;
  scope: string;
  key: string;
  requestHash: string;
}

/** JSON with sorted keys, so the same body hashes the same whatever its key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonical(body)).digest('hex');
}

const reused = () =>
  conflict('Idempotency-Key was already used with a different request body; use a new key for a new request');

function live(db: Db, ref: IdempotencyRef) {
  return db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response'])
    .where('org_id', '=', ref.orgId)
    .where('scope', '=', ref.scope)
    .where('key', '=', ref.key)
    .where('created_at', '>', sql<Date>`now() - ${IDEMPOTENCY_WINDOW_HOURS} * interval '1 hour'`);
}

/** The first response for this key, when there is one; a 409 when the key came with another body. */
export async function findResponse<T>(db: Db, ref: IdempotencyRef): Promise<T | null> {
  const row = await live(db, ref).executeTakeFirst();
  if (!row) return null;
  if (row.request_hash !== ref.requestHash) throw reused();
  return (row.response as T | null) ?? null;
}

/**
 * Inside the creating transaction: takes the key with the response about to be given, or
 * returns the response of whoever took it first (a concurrent holder is waited for by the
 * unique index). A rolled-back creation leaves the key free.
 */
export async function claim<T extends Record<string, unknown>>(
  trx: Transaction<Database>,
  ref: IdempotencyRef,
  response: T,
): Promise<{ claimed: true } | { claimed: false; response: T }> {
  await trx
    .deleteFrom('idempotency_keys')
    .where('org_id', '=', ref.orgId)
    .where('scope', '=', ref.scope)
    .where('key', '=', ref.key)
    .where('created_at', '<=', sql<Date>`now() - ${IDEMPOTENCY_WINDOW_HOURS} * interval '1 hour'`)
    .execute();
  const inserted = await trx
    .insertInto('idempotency_keys')
    .values({
      org_id: ref.orgId,
      scope: ref.scope,
      key: ref.key,
      request_hash: ref.requestHash,
      response: JSON.stringify(response),
    })
    .onConflict((oc) => oc.columns(['org_id', 'scope', 'key']).doNothing())
    .returning('key')
    .executeTakeFirst();
  if (inserted) return { claimed: true };
  const row = await trx
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response'])
    .where('org_id', '=', ref.orgId)
    .where('scope', '=', ref.scope)
    .where('key', '=', ref.key)
    .executeTakeFirstOrThrow();
  if (row.request_hash !== ref.requestHash) throw reused();
  return { claimed: false, response: row.response as T };
}

/** Replaces the stored response (the run's status turned out other than first written). */
export async function updateResponse(db: Db, ref: IdempotencyRef, response: Record<string, unknown>): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ response: JSON.stringify(response) })
    .where('org_id', '=', ref.orgId)
    .where('scope', '=', ref.scope)
    .where('key', '=', ref.key)
    .execute();
}

/** Forgets keys past the window (CONTRACTS §4: 24 hours). */
export async function deleteExpired(db: Db): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', sql<Date>`now() - ${IDEMPOTENCY_WINDOW_HOURS} * interval '1 hour'`)
    .execute();
}
