import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kyselyPool } from '../../src/db/kysely-pool.js';

const url = process.env.TEST_DATABASE_URL;

describe.skipIf(!url)('statements sent again and again (PostgreSQL)', () => {
  let pool: pg.Pool;
  let db: Kysely<Record<string, never>>;
  beforeAll(() => {
    // One connection, so what it has prepared can be read back on it.
    pool = new pg.Pool({ connectionString: url, max: 1 });
    db = new Kysely({ dialect: new PostgresDialect({ pool: kyselyPool(pool, true) }) });
  });
  afterAll(async () => {
    await db?.destroy();
  });

  const prepared = async () =>
    (await pool.query('select name, statement from pg_prepared_statements order by name')).rows as Array<{
      name: string;
      statement: string;
    }>;
  const plusOne = async (i: number) => (await sql<{ n: number }>`select ${i}::int + 1 as n`.execute(db)).rows;

  it('are prepared once they are seen a third time, and answer as before', async () => {
    for (let i = 1; i <= 2; i++) expect(await plusOne(i)).toEqual([{ n: i + 1 }]);
    expect(await prepared()).toEqual([]);
    expect(await plusOne(3)).toEqual([{ n: 4 }]);
    expect(await prepared()).toEqual([{ name: 'crewd_1', statement: 'select $1::int + 1 as n' }]);
    for (let i = 4; i <= 5; i++) expect(await plusOne(i)).toEqual([{ n: i + 1 }]);
    expect(await prepared()).toHaveLength(1);
  });

  it('leave statements without parameters, and those seen once, unprepared', async () => {
    for (let i = 0; i < 5; i++) await sql`select 42 as answer`.execute(db);
    await sql`select ${'x'}::text as once`.execute(db);
    expect((await prepared()).map((row) => row.statement)).toEqual(['select $1::int + 1 as n']);
  });

  it('count the rows a prepared statement changed, as Kysely reads them', async () => {
    await sql`create temporary table counted (n int)`.execute(db);
    for (let i = 0; i < 4; i++) {
      const result = await sql`insert into counted select generate_series(1, ${i + 1}::int)`.execute(db);
      expect(result.numAffectedRows).toBe(BigInt(i + 1));
    }
    expect((await prepared()).map((row) => row.statement)).toContain(
      'insert into counted select generate_series(1, $1::int)',
    );
  });

  it('keep failing as the statement fails, and keep working afterwards', async () => {
    const divide = (by: number) => sql<{ n: number }>`select 1 / ${by}::int as n`.execute(db);
    for (let i = 0; i < 4; i++) await expect(divide(0)).rejects.toThrow(/division by zero/);
    expect((await divide(1)).rows).toEqual([{ n: 1 }]);
  });
});

describe.skipIf(!url)('statements with DATABASE_PREPARED_STATEMENTS=off (PostgreSQL)', () => {
  it('are never prepared', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: kyselyPool(pool, false) }) });
    try {
      for (let i = 0; i < 5; i++) await sql`select ${i}::int as n`.execute(db);
      expect((await pool.query('select count(*)::int as n from pg_prepared_statements')).rows).toEqual([{ n: 0 }]);
    } finally {
      await db.destroy();
    }
  });
});
