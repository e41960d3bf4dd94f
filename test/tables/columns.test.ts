import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { createTestContext, type TestContext } from '../helpers/app.js';
import { createTable, expectError, insertRows, query } from './helpers.js';

describe('replacing columns through PATCH', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  const patch = (id: string, body: unknown) => ctx.call('PATCH', `/v1/tables/${id}`, { body });
  const allRows = async (id: string) =>
    (await query(ctx, id, { sort_by: 'k', sort_direction: 'asc', limit: 1000 })).rows.map(
      ({ id: _id, _meta, ...values }) => values,
    );

  it('drops left-out columns with their values and adds new ones empty', async () => {
    const table = await createTable(ctx, {
      name: 'Drop and add',
      columns: [
        { name: 'k', type: 'number' },
        { name: 'old', type: 'text' },
      ],
    });
    await insertRows(ctx, table.id, [
      { k: 1, old: 'x' },
      { k: 2, old: 'y' },
    ]);
    const response = await patch(table.id, {
      columns: [
        { name: 'new', type: 'boolean' },
        { name: 'k', type: 'number' },
      ],
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().columns).toEqual([
      { name: 'new', type: 'boolean', required: false },
      { name: 'k', type: 'number', required: false },
    ]);
    expect(response.json().row_count).toBe(2);
    const rows = await query(ctx, table.id, { sort_by: 'k', sort_direction: 'asc' });
    expect(rows.rows.map((r) => Object.keys(r))).toEqual([
      ['id', 'new', 'k', '_meta'],
      ['id', 'new', 'k', '_meta'],
    ]);
    expect(rows.rows.map((r) => [r.new, r.k])).toEqual([
      [null, 1],
      [null, 2],
    ]);
    const gone = await ctx.call('POST', `/v1/tables/${table.id}/query`, {
      body: { filter: { and: [{ column: 'old', operator: 'eq', value: 'x' }] } },
    });
    expect(expectError(gone, 400).message).toBe('filter.and[0]: unknown column "old" (operator "eq")');
    // Re-adding a dropped name gives a new, empty column.
    await patch(table.id, {
      columns: [
        { name: 'k', type: 'number' },
        { name: 'old', type: 'text' },
      ],
    });
    expect((await allRows(table.id)).map((r) => r.old)).toEqual([null, null]);
  });

  it('converts stored values when a type changes', async () => {
    const table = await createTable(ctx, {
      name: 'Conversions',
      columns: [
        { name: 'k', type: 'number' },
        { name: 'num_text', type: 'text' },
        { name: 'text_num', type: 'number' },
        { name: 'bool_text', type: 'text' },
        { name: 'num_bool', type: 'number' },
        { name: 'date_text', type: 'text' },
        { name: 'text_date', type: 'datetime' },
        { name: 'to_json', type: 'text' },
        { name: 'json_text', type: 'json' },
        { name: 'bool_num', type: 'boolean' },
        { name: 'to_select', type: 'text' },
        { name: 'mail', type: 'text' },
      ],
    });
    await insertRows(ctx, table.id, [
      {
        k: 1,
        num_text: ' 12.5 ',
        text_num: 1.5,
        bool_text: 'TRUE',
        num_bool: 0,
        date_text: '2024-05-01T10:00:00+02:00',
        text_date: '2024-05-01T08:00:00Z',
        to_json: 'hello',
        json_text: { a: 1 },
        bool_num: true,
        to_select: 'red',
        mail: 'a@b.io',
      },
      { k: 2, num_text: '-3e2', text_num: 2, bool_text: 'false', num_bool: 1, json_text: 'plain', bool_num: false },
      { k: 3 },
    ]);
    const response = await patch(table.id, {
      columns: [
        { name: 'k', type: 'number' },
        { name: 'num_text', type: 'number' },
        { name: 'text_num', type: 'text' },
        { name: 'bool_text', type: 'boolean' },
        { name: 'num_bool', type: 'boolean' },
        { name: 'date_text', type: 'datetime' },
        { name: 'text_date', type: 'text' },
        { name: 'to_json', type: 'json' },
        { name: 'json_text', type: 'text' },
        { name: 'bool_num', type: 'number' },
        { name: 'to_select', type: 'select', options: ['red', 'green'] },
        { name: 'mail', type: 'email' },
      ],
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(await allRows(table.id)).toEqual([
      {
        k: 1,
        num_text: 12.5,
        text_num: '1.5',
        bool_text: true,
        num_bool: false,
        date_text: '2024-05-01T08:00:00.000Z',
        text_date: '2024-05-01T08:00:00.000Z',
        to_json: 'hello',
        json_text: '{"a":1}',
        bool_num: 1,
        to_select: 'red',
        mail: 'a@b.io',
      },
      {
        k: 2,
        num_text: -300,
        text_num: '2',
        bool_text: false,
        num_bool: true,
        date_text: null,
        text_date: null,
        to_json: null,
        json_text: 'plain',
        bool_num: 0,
        to_select: null,
        mail: null,
      },
      {
        k: 3,
        num_text: null,
        text_num: null,
        bool_text: null,
        num_bool: null,
        date_text: null,
        text_date: null,
        to_json: null,
        json_text: null,
        bool_num: null,
        to_select: null,
        mail: null,
      },
    ]);
    // Converted columns filter and sort with their new type.
    const filtered = await query(ctx, table.id, {
      filter: { and: [{ column: 'num_text', operator: 'gt', value: 0 }] },
    });
    expect(filtered.rows.map((r) => r.k)).toEqual([1]);
    const sorted = await query(ctx, table.id, {
      sort_by: 'num_text',
      sort_direction: 'asc',
      filter: { and: [{ column: 'num_text', operator: 'is_not_null' }] },
    });
    expect(sorted.rows.map((r) => r.k)).toEqual([2, 1]);
    const selected = await query(ctx, table.id, {
      filter: { and: [{ column: 'to_select', operator: 'in', value: ['red'] }] },
    });
    expect(selected.total).toBe(1);
    // New inserts follow the new types.
    const bad = await ctx.call('POST', `/v1/tables/${table.id}/rows`, { body: { num_text: 'x' } });
    expect(expectError(bad, 400).message).toBe('column "num_text" must be a finite number');
  });

  it('refuses a change that cannot be made and changes nothing', async () => {
    const table = await createTable(ctx, {
      name: 'Refusals',
      columns: [
        { name: 'k', type: 'number' },
        { name: 'price', type: 'text' },
        { name: 'note', type: 'text' },
        { name: 'stage', type: 'select', options: ['a', 'b', 'c'] },
      ],
    });
    await insertRows(ctx, table.id, [
      { k: 1, price: '10', note: 'n1', stage: 'a' },
      { k: 2, price: 'cheap', stage: 'b' },
      { k: 3, price: 'free', stage: 'b' },
      { k: 4, price: 'cheap' },
    ]);
    const before = await ctx.call('GET', `/v1/tables/${table.id}`);
    const rowsBefore = await allRows(table.id);
    const cases: Array<[unknown, string]> = [
      [
        [
          { name: 'k', type: 'number' },
          { name: 'price', type: 'number' },
          { name: 'stage', type: 'select', options: ['a', 'b', 'c'] },
        ],
        'columns.1: cannot change column "price" from text to number: 3 rows hold values that cannot be converted (such as "cheap")',
      ],
      [
        [
          { name: 'k', type: 'number' },
          { name: 'price', type: 'text' },
          { name: 'note', type: 'text', required: true },
          { name: 'stage', type: 'select', options: ['a', 'b', 'c'] },
        ],
        'columns.2: column "note" cannot become required: 3 rows have no value',
      ],
      [
        [
          { name: 'k', type: 'number' },
          { name: 'stage', type: 'select', options: ['a', 'c'] },
        ],
        'columns.1: cannot change column "stage" from select to select with the given options: 2 rows hold values that cannot be converted (such as "b")',
      ],
      [
        [
          { name: 'k', type: 'number' },
          { name: 'extra', type: 'text', required: true },
        ],
        'columns.1: column "extra" cannot be added as required: 4 rows have no value for it',
      ],
      [
        [
          { name: 'k', type: 'number' },
          { name: 'price', type: 'datetime' },
        ],
        'columns.1: cannot change column "price" from text to datetime: 4 rows hold values that cannot be converted (such as "10")',
      ],
      [
        [
          { name: 'k', type: 'boolean' },
          { name: 'price', type: 'text' },
        ],
        'columns.0: cannot change column "k" from number to boolean: 3 rows hold values that cannot be converted (such as "2")',
      ],
      [
        [
          { name: 'k', type: 'number' },
          { name: 'k', type: 'text' },
        ],
        'columns.1.name: duplicate column name "k"',
      ],
    ];
    for (const [columns, message] of cases) {
      const response = await patch(table.id, { name: 'Renamed meanwhile', columns });
      expect(expectError(response, 400), message).toEqual({ message, code: 'bad_request' });
    }
    const after = await ctx.call('GET', `/v1/tables/${table.id}`);
    expect(after.json()).toEqual(before.json());
    expect(await allRows(table.id)).toEqual(rowsBefore);
  });

  it('makes a column required once every row has a value, and keeps values when nothing changes', async () => {
    const table = await createTable(ctx, {
      name: 'Requirable',
      columns: [
        { name: 'k', type: 'number' },
        { name: 'stage', type: 'select', options: ['a', 'b'] },
      ],
    });
    await insertRows(ctx, table.id, [
      { k: 1, stage: 'a' },
      { k: 2, stage: 'b' },
    ]);
    const same = await patch(table.id, {
      columns: [
        { name: 'k', type: 'number' },
        { name: 'stage', type: 'select', options: ['a', 'b'] },
      ],
    });
    expect(same.statusCode).toBe(200);
    expect(await allRows(table.id)).toEqual([
      { k: 1, stage: 'a' },
      { k: 2, stage: 'b' },
    ]);
    const required = await patch(table.id, {
      columns: [
        { name: 'k', type: 'number', required: true },
        { name: 'stage', type: 'select', options: ['b', 'a', 'c'], required: true },
      ],
    });
    expect(required.statusCode, required.body).toBe(200);
    expect(required.json().columns).toEqual([
      { name: 'k', type: 'number', required: true },
      { name: 'stage', type: 'select', required: true, options: ['b', 'a', 'c'] },
    ]);
    const missing = await ctx.call('POST', `/v1/tables/${table.id}/rows`, { body: { k: 3 } });
    expect(expectError(missing, 400).message).toBe('column "stage" is required');
    await insertRows(ctx, table.id, [{ k: 3, stage: 'c' }]);
    // Select back to text keeps the values as they are.
    const text = await patch(table.id, {
      columns: [
        { name: 'k', type: 'number' },
        { name: 'stage', type: 'text' },
      ],
    });
    expect(text.statusCode, text.body).toBe(200);
    expect((await allRows(table.id)).map((r) => r.stage)).toEqual(['a', 'b', 'c']);
    const contains = await query(ctx, table.id, {
      filter: { and: [{ column: 'stage', operator: 'gt', value: 'a' }] },
    });
    expect(contains.total).toBe(2);
  });

  it('answers a query right after a column change with the new definition', async () => {
    const table = await createTable(ctx, { name: 'Fresh definitions', columns: [{ name: 'k', type: 'number' }] });
    await insertRows(ctx, table.id, [{ k: 1 }]);
    expect((await query(ctx, table.id, {})).rows[0]).toMatchObject({ k: 1 });
    await patch(table.id, {
      columns: [
        { name: 'k', type: 'text' },
        { name: 'added', type: 'boolean' },
      ],
    });
    const after = await query(ctx, table.id, { filter: { and: [{ column: 'added', operator: 'is_null' }] } });
    expect(after.rows[0]).toMatchObject({ k: '1', added: null });
    await ctx.call('DELETE', `/v1/tables/${table.id}`);
    const gone = await ctx.call('POST', `/v1/tables/${table.id}/query`, { body: {} });
    expect(expectError(gone, 404).message).toBe('Table not found');
  });

  it('sees a column change made through another instance on the next query', async () => {
    // A second app on the same database: its own cache of table definitions.
    const other = await buildApp({ config: ctx.config, database: ctx.database.handle, logger: createLogger('silent') });
    await other.ready();
    try {
      const viaOther = (method: 'PATCH' | 'DELETE', url: string, body?: unknown) =>
        other.inject({
          method,
          url,
          headers: { authorization: `Bearer ${ctx.adminKey}` },
          ...(body === undefined ? {} : { payload: body as object }),
        });
      const table = await createTable(ctx, { name: 'Two instances', columns: [{ name: 'k', type: 'number' }] });
      await insertRows(ctx, table.id, [{ k: 1 }, { k: 2 }]);
      expect((await query(ctx, table.id, { sort_by: 'k', sort_direction: 'asc' })).rows.map((r) => r.k)).toEqual([
        1, 2,
      ]);

      const changed = await viaOther('PATCH', `/v1/tables/${table.id}`, {
        columns: [
          { name: 'k', type: 'text' },
          { name: 'tag', type: 'select', options: ['x'] },
        ],
      });
      expect(changed.statusCode, changed.body).toBe(200);
      const after = await query(ctx, table.id, {
        filter: { and: [{ column: 'tag', operator: 'is_null' }] },
        sort_by: 'k',
        sort_direction: 'asc',
      });
      expect(after.rows.map((r) => [r.k, r.tag])).toEqual([
        ['1', null],
        ['2', null],
      ]);
      // Same physical columns, new definition: text → select keeps the values in place.
      const same = await viaOther('PATCH', `/v1/tables/${table.id}`, {
        columns: [
          { name: 'k', type: 'select', options: ['1', '2'] },
          { name: 'tag', type: 'select', options: ['x'] },
        ],
      });
      expect(same.statusCode, same.body).toBe(200);
      const select = await ctx.call('POST', `/v1/tables/${table.id}/query`, {
        body: { filter: { and: [{ column: 'k', operator: 'gt', value: '1' }] } },
      });
      expect(expectError(select, 400).message).toMatch(/operator "gt" does not apply to column "k" of type select/);

      expect((await viaOther('DELETE', `/v1/tables/${table.id}`)).statusCode).toBe(200);
      const gone = await ctx.call('POST', `/v1/tables/${table.id}/query`, { body: {} });
      expect(expectError(gone, 404).message).toBe('Table not found');
    } finally {
      await other.close();
    }
  });
});
