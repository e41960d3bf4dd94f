import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/app.js';
import { createTable, expectError, insertRows, query } from './helpers.js';

const HOSTILE = '"; drop table x; --';
const QUOTE = "it's'); delete from tables; --";

describe('user names and values never become SQL', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('stores, filters, sorts and updates columns named like SQL or __proto__', async () => {
    const table = await createTable(ctx, {
      name: `${HOSTILE} table`,
      description: QUOTE,
      columns: [
        { name: HOSTILE, type: 'text' },
        { name: '__proto__', type: 'number' },
        { name: 'constructor', type: 'select', options: [QUOTE, 'plain'] },
        { name: 'toString', type: 'json' },
        { name: 'hasOwnProperty', type: 'boolean' },
        { name: 'Ünïcødé 🚀 column', type: 'text' },
      ],
    });
    expect(table.columns.map((c: { name: string }) => c.name)).toEqual([
      HOSTILE,
      '__proto__',
      'constructor',
      'toString',
      'hasOwnProperty',
      'Ünïcødé 🚀 column',
    ]);
    expect(table.description).toBe(QUOTE);

    // Raw JSON, so `__proto__` is sent as a key the way any client would send it.
    const body = `{"${HOSTILE.replaceAll('"', '\\"')}": "${QUOTE}", "__proto__": 7, "constructor": "${QUOTE}", "toString": {"__proto__": {"x": 1}}, "hasOwnProperty": true, "Ünïcødé 🚀 column": "ok"}`;
    const created = await ctx.app.inject({
      method: 'POST',
      url: `/v1/tables/${table.id}/rows`,
      headers: { authorization: `Bearer ${ctx.adminKey}`, 'content-type': 'application/json' },
      payload: body,
    });
    expect(created.statusCode, created.body).toBe(201);
    const expected = `"${HOSTILE.replaceAll('"', '\\"')}":"${QUOTE}","__proto__":7,"constructor":"${QUOTE}","toString":{"__proto__":{"x":1}},"hasOwnProperty":true,"Ünïcødé 🚀 column":"ok"`;
    expect(created.body).toContain(expected);
    const row = JSON.parse(created.body);
    expect(Object.keys(row)).toEqual([
      'id',
      HOSTILE,
      '__proto__',
      'constructor',
      'toString',
      'hasOwnProperty',
      'Ünïcødé 🚀 column',
      '_meta',
    ]);

    const fetched = await ctx.call('GET', `/v1/tables/${table.id}/rows/${row.id}`);
    expect(fetched.body).toContain(expected);

    const filtered = await query(ctx, table.id, {
      filter: {
        and: [
          { column: HOSTILE, operator: 'eq', value: QUOTE },
          { column: '__proto__', operator: 'gte', value: 7 },
          { column: 'constructor', operator: 'contains', value: "'); delete" },
          { column: 'toString', operator: 'eq', value: JSON.parse('{"__proto__": {"x": 1}}') },
        ],
      },
      sort_by: '__proto__',
    });
    expect(filtered.total).toBe(1);

    const patched = await ctx.app.inject({
      method: 'PATCH',
      url: `/v1/tables/${table.id}/rows/${row.id}`,
      headers: { authorization: `Bearer ${ctx.adminKey}`, 'content-type': 'application/json' },
      payload: '{"__proto__": 8}',
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.body).toContain('"__proto__":8');

    const bulk = await ctx.app.inject({
      method: 'PATCH',
      url: `/v1/tables/${table.id}/rows`,
      headers: { authorization: `Bearer ${ctx.adminKey}`, 'content-type': 'application/json' },
      payload: `{"filter": {"and": [{"column": "__proto__", "operator": "eq", "value": 8}]}, "update": {"__proto__": 9}}`,
    });
    expect(bulk.json()).toEqual({ updated: 1 });

    // The catalog and the other tables are intact, and the column names still work after a PATCH.
    const list = await ctx.call('GET', '/v1/tables');
    expect(list.json().tables.map((t: { id: string }) => t.id)).toContain(table.id);
    const renamed = await ctx.call('PATCH', `/v1/tables/${table.id}`, {
      body: {
        columns: [
          { name: HOSTILE, type: 'text' },
          { name: '__proto__', type: 'text' },
        ],
      },
    });
    expect(renamed.statusCode, renamed.body).toBe(200);
    const after = await ctx.call('GET', `/v1/tables/${table.id}/rows/${row.id}`);
    expect(after.body).toContain(`"__proto__":"9"`);
  });

  it('treats hostile values and table names as data', async () => {
    const table = await createTable(ctx, { name: QUOTE, columns: [{ name: 'v', type: 'text' }] });
    await insertRows(ctx, table.id, [{ v: QUOTE }, { v: HOSTILE }, { v: '%' }, { v: '\\' }]);
    for (const [operator, value, total] of [
      ['eq', QUOTE, 1],
      ['in', [HOSTILE, QUOTE], 2],
      ['contains', '%', 1],
      ['contains', '\\', 1],
      ['starts_with', '"', 1],
      ['ends_with', '--', 2],
    ] as const) {
      const result = await query(ctx, table.id, { filter: { and: [{ column: 'v', operator, value }] } });
      expect(result.total, `${operator} ${JSON.stringify(value)}`).toBe(total);
    }
    const dup = await ctx.call('POST', '/v1/tables', { body: { name: QUOTE, columns: [] } });
    expect(expectError(dup, 409).message).toBe(`Table "${QUOTE}" already exists`);
  });

  it('answers 404, not an error, for ids that look like SQL', async () => {
    for (const url of [
      `/v1/tables/${encodeURIComponent(HOSTILE)}`,
      `/v1/tables/${encodeURIComponent("tbl_x' or '1'='1")}/rows/row_1`,
    ]) {
      const response = await ctx.call('GET', url);
      expect(response.statusCode).toBe(404);
    }
    const table = await createTable(ctx, { name: 'ids', columns: [] });
    const row = await ctx.call('GET', `/v1/tables/${table.id}/rows/${encodeURIComponent("x' or '1'='1")}`);
    expect(expectError(row, 404).message).toBe('Row not found');
  });
});
