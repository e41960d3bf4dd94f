import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { compileFilter, tableFields } from '../../src/tables/filter.js';
import { tableRef } from '../../src/tables/physical.js';
import { findTable } from '../../src/tables/repository.js';
import { ADMIN_KEY, createTestContext, type TestContext } from '../helpers/app.js';
import { createTable, insertRows, query } from './helpers.js';

/**
 * Every answer of the query route (page and total) against a plain scan of the same table, with
 * the planner kept off every index, on random filters: before the table's filter indexes exist,
 * once they do, and after writes.
 */

const STAGES = ['lead', 'qualified', 'proposal', 'won', 'lost'];
const SORTS = ['score', 'due', 'stage', 'done', 'title', 'created_at', 'updated_at', 'id'];

function seeded(seed: number) {
  let state = seed;
  const next = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]) => items[int(items.length)] as T;
  return { next, int, pick };
}

const random = seeded(17);

function makeRow(i: number) {
  const maybe = <T>(value: T) => (random.next() < 0.1 ? null : value);
  return {
    title: `${random.pick(['alpha', 'bravo', 'charlie'])} ${i}`,
    score: maybe(random.int(50) * 2),
    done: maybe(random.next() < 0.5),
    due: maybe(new Date(Date.UTC(2024, 0, 1 + random.int(60))).toISOString()),
    stage: maybe(random.pick(STAGES)),
  };
}

function condition(): Record<string, unknown> {
  const day = () => new Date(Date.UTC(2024, 0, 1 + random.int(60))).toISOString();
  switch (random.int(12)) {
    case 0:
      return { column: 'score', operator: 'eq', value: random.int(50) * 2 };
    case 1:
      return { column: 'score', operator: random.pick(['gt', 'gte', 'lt', 'lte']), value: random.int(100) };
    case 2:
      return { column: 'score', operator: random.pick(['is_null', 'is_not_null']) };
    case 3:
      return { column: 'stage', operator: 'eq', value: random.pick([...STAGES, null]) };
    case 4:
      return {
        column: 'stage',
        operator: random.pick(['in', 'not_in']),
        value: [random.pick(STAGES), null].slice(0, 1 + random.int(2)),
      };
    case 5:
      return { column: 'stage', operator: 'neq', value: random.pick(STAGES) };
    case 6:
      return { column: 'done', operator: 'eq', value: random.next() < 0.5 };
    case 7:
      return { column: 'done', operator: 'is_null' };
    case 8:
      return { column: 'due', operator: random.pick(['gt', 'lte']), value: day() };
    case 9:
      return { column: 'title', operator: 'contains', value: random.pick(['alp', '1', 'x']) };
    case 10:
      return { column: 'id', operator: 'gte', value: `row_${random.int(10)}` };
    default:
      return { column: 'updated_at', operator: 'is_not_null' };
  }
}

function filter(): unknown {
  if (random.next() < 0.08) return random.next() < 0.5 ? undefined : { and: [] };
  const items: unknown[] = Array.from({ length: 1 + random.int(3) }, condition);
  if (random.next() < 0.25) items.push({ or: [condition(), condition()] });
  return random.next() < 0.1 ? { or: items } : { and: items };
}

interface Case {
  filter: unknown;
  sort_by: string;
  sort_direction: 'asc' | 'desc';
  limit: number;
  offset: number;
}

function makeCase(): Case {
  return {
    filter: filter(),
    sort_by: random.pick(SORTS),
    sort_direction: random.pick(['asc', 'desc'] as const),
    limit: random.pick([0, 1, 7, 50, 200, 1000]),
    offset: random.pick([0, 0, 0, 5, 120, 1190, 5000]),
  };
}

describe('totals and pages stay the same as a plain scan', () => {
  let ctx: TestContext;
  let tableId: string;
  const cases = Array.from({ length: 60 }, makeCase);

  beforeAll(async () => {
    // Every table gets its filter indexes, however small.
    ctx = await createTestContext({ TABLE_INDEX_MIN_ROWS: '0' });
    const table = await createTable(ctx, {
      name: 'Totals',
      columns: [
        { name: 'title', type: 'text' },
        { name: 'score', type: 'number' },
        { name: 'done', type: 'boolean' },
        { name: 'due', type: 'datetime' },
        { name: 'stage', type: 'select', options: STAGES },
      ],
    });
    tableId = table.id;
    for (let batch = 0; batch < 2; batch++) {
      await insertRows(
        ctx,
        tableId,
        Array.from({ length: 600 }, (_, i) => makeRow(batch * 600 + i)),
      );
    }
  });
  afterAll(async () => ctx?.close());

  /** The same question as a plain scan: no index may answer it. */
  async function plainScan(input: Case) {
    const table = await findTable(ctx.database.handle.db, 'org_default', tableId);
    if (!table) throw new Error('table gone');
    const fields = tableFields(table.columns);
    const where = input.filter === undefined ? sql<boolean>`true` : compileFilter(input.filter, fields);
    const sort = sql.id(fields.get(input.sort_by)?.ident ?? 'created_at');
    const direction = sql.raw(input.sort_direction);
    return ctx.database.handle.db.transaction().execute(async (trx) => {
      for (const setting of ['enable_indexscan', 'enable_indexonlyscan', 'enable_bitmapscan']) {
        await sql`select set_config(${setting}, 'off', true)`.execute(trx);
      }
      const page = await sql<{ id: string }>`select id from ${tableRef(tableId)} where ${where}
        order by ${sort} ${direction}, id ${direction} limit ${input.limit} offset ${input.offset}`.execute(trx);
      const count = await sql<{
        n: number;
      }>`select count(*)::int8 as n from ${tableRef(tableId)} where ${where}`.execute(trx);
      return { ids: page.rows.map((row) => row.id), total: Number(count.rows[0]?.n) };
    });
  }

  async function expectSameAnswers(label: string) {
    for (const [index, input] of cases.entries()) {
      const answer = await query(ctx, tableId, input);
      const plain = await plainScan(input);
      const context = `${label}, case ${index}: ${JSON.stringify(input)}`;
      expect(answer.total, context).toBe(plain.total);
      expect(
        answer.rows.map((row) => row.id),
        context,
      ).toEqual(plain.ids);
    }
  }

  async function shapeIndexes(): Promise<string[]> {
    const result = await sql<{ name: string }>`
      select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid
      join pg_class t on t.oid = i.indrelid
      where t.relname = ${tableId} and c.relname ~ '_a_[0-9a-f]{10}$' and i.indisvalid`.execute(ctx.database.handle.db);
    return result.rows.map((row) => row.name);
  }

  // 480 queries and the wait for four index builds: more than the default 30 s on a loaded machine.
  it('before the filter indexes exist, while they are built, and once they are', async () => {
    // Each shape asked three times is what makes its index be built.
    await expectSameAnswers('first pass');
    await expectSameAnswers('second pass');
    await expectSameAnswers('third pass');
    const deadline = Date.now() + 30_000;
    while ((await shapeIndexes()).length < 4 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // At most four per table, and this many shapes want more than four.
    expect(await shapeIndexes()).toHaveLength(4);
    await expectSameAnswers('with filter indexes');
  }, 120_000);

  it('after inserts, updates and deletes', async () => {
    await insertRows(
      ctx,
      tableId,
      Array.from({ length: 50 }, (_, i) => makeRow(2000 + i)),
    );
    const updated = await ctx.call('PATCH', `/v1/tables/${tableId}/rows`, {
      body: { filter: { and: [{ column: 'stage', operator: 'eq', value: 'won' }] }, update: { score: 7 } },
    });
    expect(updated.statusCode, updated.body).toBe(200);
    const deleted = await ctx.call('DELETE', `/v1/tables/${tableId}/rows`, {
      body: { filter: { and: [{ column: 'score', operator: 'lt', value: 10 }] } },
    });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(deleted.json().deleted).toBeGreaterThan(0);
    await expectSameAnswers('after writes');
  });

  it('after a write through another instance on the same database', async () => {
    const other = await buildApp({ config: ctx.config, database: ctx.database.handle, logger: createLogger('silent') });
    try {
      await other.ready();
      const input: Case = {
        filter: { and: [{ column: 'stage', operator: 'eq', value: 'lead' }] },
        sort_by: 'score',
        sort_direction: 'desc',
        limit: 5,
        offset: 0,
      };
      const before = await query(ctx, tableId, input);
      expect((await query(ctx, tableId, input)).total).toBe(before.total);
      const inserted = await other.inject({
        method: 'POST',
        url: `/v1/tables/${tableId}/rows`,
        headers: { authorization: `Bearer ${ADMIN_KEY}` },
        payload: [{ stage: 'lead' }, { stage: 'lead' }],
      });
      expect(inserted.statusCode, inserted.body).toBe(201);
      const after = await query(ctx, tableId, input);
      expect(after.total).toBe(before.total + 2);
      expect(after.total).toBe((await plainScan(input)).total);
    } finally {
      await other.close();
    }
  });
});
