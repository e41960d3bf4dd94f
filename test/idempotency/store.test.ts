import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapDefaultOrganization, DEFAULT_ORG_ID } from '../../src/access/bootstrap.js';
import {
  claim,
  deleteExpired,
  findResponse,
  type IdempotencyRef,
  requestHash,
  updateResponse,
} from '../../src/idempotency/store.js';
import { randomToken } from '../../src/ids.js';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { until } from '../helpers/poll.js';

/** The store of Idempotency-Keys (CONTRACTS §4) on a real database: what a key answers, and for how long. */
describe('the idempotency store', () => {
  let database: TestDatabase;
  const db = () => database.handle.db;

  beforeAll(async () => {
    database = await createTestDatabase();
    await bootstrapDefaultOrganization(db(), undefined);
  });
  afterAll(async () => {
    await database?.destroy();
  });

  const ref = (body: unknown, key = randomToken(8)): IdempotencyRef => ({
    orgId: DEFAULT_ORG_ID,
    scope: 'runs',
    key,
    requestHash: requestHash(body),
  });

  /** Moves a key's creation back by `hours`, as if it had been taken that long ago. */
  const age = (key: string, hours: number) =>
    sql`update idempotency_keys set created_at = now() - ${hours} * interval '1 hour' where key = ${key}`.execute(db());

  it('hashes a body the same whatever its key order, leaving out undefined members', () => {
    const first = requestHash({ b: [1, { y: 2, x: null }], a: 'one', gone: undefined });
    expect(requestHash({ a: 'one', b: [1, { x: null, y: 2 }] })).toBe(first);
    expect(requestHash({ a: 'one', b: [{ x: null, y: 2 }, 1] })).not.toBe(first);
    expect(requestHash({ a: 'one', b: [1, { x: 0, y: 2 }] })).not.toBe(first);
    expect(requestHash(undefined)).toBe(requestHash(null));
  });

  it('answers a key with its first response, and refuses it with another body', async () => {
    const first = ref({ input: 1 });
    expect(await findResponse(db(), first)).toBeNull();
    expect(
      await db()
        .transaction()
        .execute((trx) => claim(trx, first, { id: 'run_a' })),
    ).toEqual({ claimed: true });

    expect(await findResponse(db(), first)).toEqual({ id: 'run_a' });
    const replay = await db()
      .transaction()
      .execute((trx) => claim(trx, first, { id: 'run_b' }));
    expect(replay).toEqual({ claimed: false, response: { id: 'run_a' } });

    const other = { ...ref({ input: 2 }), key: first.key };
    await expect(findResponse(db(), other)).rejects.toMatchObject({ statusCode: 409 });
    await expect(
      db()
        .transaction()
        .execute((trx) => claim(trx, other, { id: 'run_c' })),
    ).rejects.toMatchObject({
      statusCode: 409,
    });
    // Another scope or organization has keys of its own.
    expect(await findResponse(db(), { ...other, scope: 'threads' })).toBeNull();
  });

  it('leaves the key free when the creating transaction rolls back', async () => {
    const first = ref({ input: 'rolled back' });
    const failing = db()
      .transaction()
      .execute(async (trx) => {
        expect(await claim(trx, first, { id: 'run_never' })).toEqual({ claimed: true });
        throw new Error('the creation failed');
      });
    await expect(failing).rejects.toThrow('the creation failed');
    expect(await findResponse(db(), first)).toBeNull();
    expect(
      await db()
        .transaction()
        .execute((trx) => claim(trx, first, { id: 'run_d' })),
    ).toEqual({ claimed: true });
  });

  it('replaces the stored response when the created thing turned out otherwise', async () => {
    const first = ref({ input: 'update' });
    await db()
      .transaction()
      .execute((trx) => claim(trx, first, { id: 'run_e', status: 'running' }));
    await updateResponse(db(), first, { id: 'run_e', status: 'pending' });
    expect(await findResponse(db(), first)).toEqual({ id: 'run_e', status: 'pending' });
  });

  it('forgets a key after 24 hours: it answers nothing, may be taken with any body, and is deleted', async () => {
    const old = ref({ input: 'old' });
    await db()
      .transaction()
      .execute((trx) => claim(trx, old, { id: 'run_old' }));
    await age(old.key, 25);
    expect(await findResponse(db(), old)).toBeNull();
    const renewed = { ...ref({ input: 'new' }), key: old.key };
    expect(
      await db()
        .transaction()
        .execute((trx) => claim(trx, renewed, { id: 'run_new' })),
    ).toEqual({
      claimed: true,
    });
    expect(await findResponse(db(), renewed)).toEqual({ id: 'run_new' });

    const expired = ref({ input: 'expired' });
    const young = ref({ input: 'young' });
    for (const each of [expired, young])
      await db()
        .transaction()
        .execute((trx) => claim(trx, each, { id: each.key }));
    await age(expired.key, 24.5);
    await age(young.key, 23.5);
    await deleteExpired(db());
    const left = await db()
      .selectFrom('idempotency_keys')
      .select('key')
      .where('key', 'in', [expired.key, young.key])
      .execute();
    expect(left.map((row) => row.key)).toEqual([young.key]);
  });

  it('makes a second claim of a key wait for the first transaction, then answers with its response', async () => {
    const first = ref({ input: 'race' });
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let claimedFirst = () => {};
    const firstClaimed = new Promise<void>((resolve) => {
      claimedFirst = resolve;
    });
    const holder = db()
      .transaction()
      .execute(async (trx) => {
        const result = await claim(trx, first, { id: 'run_first' });
        claimedFirst();
        await held;
        return result;
      });
    await firstClaimed;
    const second = db()
      .transaction()
      .execute((trx) => claim(trx, first, { id: 'run_second' }));
    // On PostgreSQL the second insert waits on the key's unique index; PGlite has one connection,
    // so there the second transaction begins only once the first has ended.
    if (usingPostgres()) {
      await until(async () => {
        const { rows } = await sql<{ waiting: number }>`select count(*)::int as waiting from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query ilike 'insert into "idempotency_keys"%'`.execute(
          db(),
        );
        return (rows[0]?.waiting ?? 0) > 0;
      });
    }
    release();
    expect(await holder).toEqual({ claimed: true });
    expect(await second).toEqual({ claimed: false, response: { id: 'run_first' } });
  });
});
