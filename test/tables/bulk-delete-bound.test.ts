import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/app.js';
import { createTable, insertRows, query } from './helpers.js';

describe('bulk delete bound (MAX_BULK_DELETE_ROWS)', () => {
  let ctx: TestContext;
  let table: { id: string };
  beforeAll(async () => {
    ctx = await createTestContext({ MAX_BULK_DELETE_ROWS: '5' });
    table = await createTable(ctx, { name: 'Notes', columns: [{ name: 'n', type: 'number' }] });
    await insertRows(
      ctx,
      table.id,
      Array.from({ length: 10 }, (_, i) => ({ n: i })),
    );
  });
  afterAll(() => ctx.close());

  const bulkDelete = (filter: unknown) => ctx.call('DELETE', `/v1/tables/${table.id}/rows`, { body: { filter } });
  const below = (value: number) => ({ and: [{ column: 'n', operator: 'lt', value }] });

  it('refuses, before deleting anything, a delete matching more rows than the bound', async () => {
    const response = await bulkDelete(below(6));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error: {
        message:
          'delete: 6 matching rows is more than the 5 rows one bulk delete may remove (MAX_BULK_DELETE_ROWS); ' +
          'narrow the filter and delete in several requests, or delete the table',
        code: 'bad_request',
      },
    });
    expect((await query(ctx, table.id, {})).total).toBe(10);
  });

  it('deletes up to the bound, then the rest once the table is under it', async () => {
    expect((await bulkDelete(below(5))).json()).toEqual({ deleted: 5 });
    expect((await bulkDelete(below(100))).json()).toEqual({ deleted: 5 });
    expect((await query(ctx, table.id, {})).total).toBe(0);
  });

  it('is 100,000 rows by default', async () => {
    const plain = await createTestContext();
    try {
      expect(plain.config.maxBulkDeleteRows).toBe(100_000);
    } finally {
      await plain.close();
    }
  });
});
