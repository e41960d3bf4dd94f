import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/app.js';
import { createTable, insertRows, query } from './helpers.js';

describe('bulk update bound (MAX_BULK_UPDATE_BYTES)', () => {
  let ctx: TestContext;
  let table: { id: string };
  beforeAll(async () => {
    ctx = await createTestContext({ MAX_BULK_UPDATE_BYTES: '1000' });
    table = await createTable(ctx, {
      name: 'Notes',
      columns: [
        { name: 'n', type: 'number' },
        { name: 'body', type: 'text' },
      ],
    });
    await insertRows(
      ctx,
      table.id,
      Array.from({ length: 10 }, (_, i) => ({ n: i, body: 'short' })),
    );
  });
  afterAll(() => ctx.close());

  const bulkUpdate = (filter: unknown, update: unknown) =>
    ctx.call('PATCH', `/v1/tables/${table.id}/rows`, { body: { filter, update } });
  const all = { and: [{ column: 'n', operator: 'gte', value: 0 }] };

  it('refuses, before writing anything, an update whose matched rows × value bytes pass the bound', async () => {
    const response = await bulkUpdate(all, { body: 'é'.repeat(100) });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error: {
        message:
          'update: 10 matching rows × 200 bytes of values is more than the 1000 bytes one bulk update may write ' +
          '(MAX_BULK_UPDATE_BYTES); narrow the filter and update in several requests',
        code: 'bad_request',
      },
    });
    const unchanged = await query(ctx, table.id, {
      filter: { and: [{ column: 'body', operator: 'eq', value: 'short' }] },
    });
    expect(unchanged.total).toBe(10);
  });

  it('writes an update at the bound, and one whose narrower filter brings it under', async () => {
    const firstHalf = { and: [{ column: 'n', operator: 'lt', value: 5 }] };
    expect((await bulkUpdate(firstHalf, { body: 'x'.repeat(200) })).json()).toEqual({ updated: 5 });
    expect((await bulkUpdate(all, { body: 'y'.repeat(100) })).json()).toEqual({ updated: 10 });
    expect((await bulkUpdate(all, { n: 1, body: null })).json()).toEqual({ updated: 10 });
    const rows = await query(ctx, table.id, { filter: { and: [{ column: 'n', operator: 'eq', value: 1 }] } });
    expect(rows.total).toBe(10);
  });
});

describe('bulk update bound by default', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('is 16 MiB', async () => {
    expect(ctx.config.maxBulkUpdateBytes).toBe(16 * 1024 * 1024);
    const table = await createTable(ctx, { name: 'Big', columns: [{ name: 'body', type: 'text' }] });
    await insertRows(
      ctx,
      table.id,
      Array.from({ length: 17 }, () => ({ body: '' })),
    );
    const response = await ctx.call('PATCH', `/v1/tables/${table.id}/rows`, {
      body: {
        filter: { and: [{ column: 'body', operator: 'eq', value: '' }] },
        update: { body: 'z'.repeat(1024 * 1024) },
      },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toMatch(/^update: 17 matching rows × 1048576 bytes of values is more than/);
  });
});
