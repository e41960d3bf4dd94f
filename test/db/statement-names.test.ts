import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameRepeatedStatements } from '../../src/db/statement-names.js';

const url = process.env.TEST_DATABASE_URL;

describe.skipIf(!url)('statements sent again and again (PostgreSQL)', () => {
  let pool: pg.Pool;
  beforeAll(() => {
    // One connection, so what it has prepared can be read back on it.
    pool = new pg.Pool({ connectionString: url, max: 1 });
    nameRepeatedStatements(pool);
  });
  afterAll(async () => {
    await pool?.end();
  });

  const prepared = async () =>
    (await pool.query('select name, statement from pg_prepared_statements order by name')).rows as Array<{
      name: string;
      statement: string;
    }>;

  it('are prepared once they are seen a third time, and answer as before', async () => {
    const repeated = 'select $1::int + 1 as n';
    for (let i = 1; i <= 2; i++) expect((await pool.query(repeated, [i])).rows).toEqual([{ n: i + 1 }]);
    expect(await prepared()).toEqual([]);
    for (let i = 3; i <= 5; i++) expect((await pool.query(repeated, [i])).rows).toEqual([{ n: i + 1 }]);
    expect(await prepared()).toEqual([{ name: 'crewd_1', statement: repeated }]);
  });

  it('leave statements without parameters, and those seen once, unprepared', async () => {
    for (let i = 0; i < 5; i++) await pool.query('select 42 as answer', []);
    await pool.query('select $1::text as once', ['x']);
    expect((await prepared()).map((row) => row.statement)).toEqual(['select $1::int + 1 as n']);
  });

  it('keep failing as the statement fails, and keep working afterwards', async () => {
    const failing = 'select 1 / $1::int as n';
    for (let i = 0; i < 4; i++) await expect(pool.query(failing, [0])).rejects.toThrow(/division by zero/);
    expect((await pool.query(failing, [1])).rows).toEqual([{ n: 1 }]);
  });
});
