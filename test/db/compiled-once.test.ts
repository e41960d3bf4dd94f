import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledOnce } from '../../src/db/compiled-once.js';
import type { Db } from '../../src/db/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('a statement compiled once', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  }, 120_000);
  afterAll(async () => database?.destroy());

  it('answers each call with its own values, the values used twice and the constants of its build kept', async () => {
    let builds = 0;
    const echo = compiledOnce((db: Db, values: { word: string; count: number | null }) => {
      builds += 1;
      return db
        .selectNoFrom([
          sql<string>`${values.word}::text`.as('word'),
          sql<string>`${values.word}::text || ${'!'}::text`.as('shout'),
          sql<number | null>`${values.count}::integer`.as('count'),
        ])
        .where(sql<boolean>`${1}::integer = 1`);
    });
    const db = database.handle.db as Db;
    expect(await echo(db, { word: 'one', count: 1 })).toEqual([{ word: 'one', shout: 'one!', count: 1 }]);
    expect(await echo(db, { word: 'two', count: null })).toEqual([{ word: 'two', shout: 'two!', count: null }]);
    expect(builds).toBe(1);
  });
});
