import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { tableFields } from '../../src/tables/filter.js';
import { type IndexPlan, indexPlanFor } from '../../src/tables/filter-shape.js';
import {
  createIndexAdvisor,
  MAX_SHAPE_INDEXES,
  REPEATS_BEFORE_INDEX,
  UNUSED_INDEX_DROP_MS,
} from '../../src/tables/index-advisor.js';
import { findTable } from '../../src/tables/repository.js';
import { createTestContext, type TestContext } from '../helpers/app.js';
import { createTable, insertRows } from './helpers.js';

describe('indexes built for repeated filter shapes', () => {
  let ctx: TestContext;
  let tableId: string;
  let plans: IndexPlan[];

  beforeAll(async () => {
    ctx = await createTestContext();
    const table = await createTable(ctx, {
      name: 'Shapes',
      columns: [
        { name: 'score', type: 'number' },
        { name: 'stage', type: 'select', options: ['a', 'b'] },
        { name: 'done', type: 'boolean' },
        { name: 'due', type: 'datetime' },
      ],
    });
    tableId = table.id;
    await insertRows(
      ctx,
      tableId,
      Array.from({ length: 30 }, (_, i) => ({ score: i, stage: i % 2 ? 'a' : 'b', done: i % 3 === 0 })),
    );
    const stored = await findTable(ctx.database.handle.db, 'org_default', tableId);
    const fields = tableFields(stored?.columns ?? []);
    const sortFields = ['score', 'due', 'created_at', 'updated_at', 'id', 'stage'];
    plans = sortFields.map((sort) => {
      const filter = {
        and: [
          { column: 'done', operator: 'eq', value: true },
          { column: 'stage', operator: 'eq', value: 'a' },
        ],
      };
      const plan = indexPlanFor(filter, fields, fields.get(sort) as NonNullable<ReturnType<typeof fields.get>>);
      if (!plan) throw new Error(`no plan sorted by ${sort}`);
      return plan;
    });
  });
  afterAll(async () => ctx?.close());

  const advisor = (minRows = 0) =>
    createIndexAdvisor(ctx.database.handle.db, {
      backend: ctx.database.handle.backend,
      minRows,
      logger: createLogger('silent'),
    });

  async function shapeIndexes(): Promise<string[]> {
    const result = await sql<{ name: string }>`
      select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid
      join pg_class t on t.oid = i.indrelid
      where t.relname = ${tableId} and c.relname ~ '_a_[0-9a-f]{10}$' and i.indisvalid order by 1`.execute(
      ctx.database.handle.db,
    );
    return result.rows.map((row) => row.name);
  }

  it('builds nothing for a table under the row threshold or before the shape repeats', async () => {
    const small = advisor(1000);
    const eager = advisor();
    const plan = plans[0] as IndexPlan;
    for (let i = 0; i < 5; i++) small.note({ id: tableId, row_count: 30 }, plan);
    for (let i = 1; i < REPEATS_BEFORE_INDEX; i++) eager.note({ id: tableId, row_count: 30 }, plan);
    await Promise.all([small.close(), eager.close()]);
    expect(await shapeIndexes()).toEqual([]);
  });

  it('builds one index when two instances see the same shape at once', async () => {
    const [one, two] = [advisor(), advisor()];
    const plan = plans[0] as IndexPlan;
    for (let i = 0; i < REPEATS_BEFORE_INDEX; i++) {
      one.note({ id: tableId, row_count: 30 }, plan);
      two.note({ id: tableId, row_count: 30 }, plan);
    }
    await Promise.all([one.idle(), two.idle()]);
    // The one that found the table locked tries again after the shape repeats again.
    for (let i = 0; i < REPEATS_BEFORE_INDEX; i++) two.note({ id: tableId, row_count: 30 }, plan);
    await Promise.all([one.close(), two.close()]);
    expect(await shapeIndexes()).toEqual([`${tableId}_${plan.suffix}`]);
  });

  it(`keeps at most ${MAX_SHAPE_INDEXES} per table, and drops those no query uses`, async () => {
    const indexes = advisor();
    for (const plan of plans) {
      for (let i = 0; i < REPEATS_BEFORE_INDEX; i++) indexes.note({ id: tableId, row_count: 30 }, plan);
    }
    await indexes.idle();
    expect(plans.length).toBeGreaterThan(MAX_SHAPE_INDEXES);
    expect(await shapeIndexes()).toHaveLength(MAX_SHAPE_INDEXES);

    const now = Date.now();
    await indexes.sweep(now);
    await indexes.sweep(now + UNUSED_INDEX_DROP_MS - 1);
    expect(await shapeIndexes()).toHaveLength(MAX_SHAPE_INDEXES);
    await indexes.sweep(now + UNUSED_INDEX_DROP_MS);
    expect(await shapeIndexes()).toEqual([]);
    await indexes.close();
  });
});
