import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/app.js';
import { createTable, expectError, insertRows, query } from './helpers.js';

type Row = Record<string, unknown> & { id: string; _meta: { created_at: string; updated_at: string } };

describe('query: filters, sorting, pagination', () => {
  let ctx: TestContext;
  let tableId: string;
  let rows: Row[];

  const names = async (filter: unknown, extra: Record<string, unknown> = {}) => {
    const result = await query(ctx, tableId, { filter, ...extra });
    expect(result.total).toBe(result.rows.length);
    return result.rows.map((row) => row.label).sort();
  };
  const cond = (column: string, operator: string, value?: unknown) =>
    value === undefined ? { and: [{ column, operator }] } : { and: [{ column, operator, value }] };

  beforeAll(async () => {
    ctx = await createTestContext();
    const table = await createTable(ctx, {
      name: 'Filterable',
      columns: [
        { name: 'label', type: 'text', required: true },
        { name: 'name', type: 'text' },
        { name: 'n', type: 'number' },
        { name: 'ok', type: 'boolean' },
        { name: 'at', type: 'datetime' },
        { name: 'stage', type: 'select', options: ['a', 'b', 'c'] },
        { name: 'site', type: 'url' },
        { name: 'mail', type: 'email' },
        { name: 'data', type: 'json' },
      ],
    });
    tableId = table.id;
    rows = (await insertRows(ctx, tableId, [
      {
        label: 'r1',
        name: 'Alpha',
        n: 1,
        ok: true,
        at: '2024-01-01T00:00:00Z',
        stage: 'a',
        site: 'https://a.example.com',
        mail: 'a@x.io',
        data: { k: 1 },
      },
      {
        label: 'r2',
        name: 'beta',
        n: 2,
        ok: false,
        at: '2024-02-01T00:00:00Z',
        stage: 'b',
        site: 'http://b.example.com/path',
        mail: 'B@y.io',
        data: [1, 2],
      },
      { label: 'r3', name: 'Gamma 100%', n: 3.5, at: '2024-03-01T12:00:00Z', stage: 'c', data: 'text' },
      { label: 'r4', ok: true },
      { label: 'r5', name: 'under_score', n: -1, ok: false, at: '2023-12-31T23:59:59.999Z', stage: 'a' },
    ])) as Row[];
  });
  afterAll(() => ctx.close());

  it('answers every row with total, limit 50 and offset 0 by default, newest first with ties on id', async () => {
    const response = await ctx.call('POST', `/v1/tables/${tableId}/query`);
    expect(response.statusCode, response.body).toBe(200);
    const result = response.json();
    expect(result).toMatchObject({ total: 5, limit: 50, offset: 0 });
    // One batch shares created_at, so the id breaks the tie, descending.
    expect(result.rows.map((r: Row) => r.id)).toEqual(
      rows
        .map((r) => r.id)
        .sort()
        .reverse(),
    );
    const empty = await query(ctx, tableId, {});
    expect(empty.total).toBe(5);
  });

  it('filters text with every operator', async () => {
    expect(await names(cond('name', 'eq', 'beta'))).toEqual(['r2']);
    expect(await names(cond('name', 'eq', 'Beta'))).toEqual([]);
    expect(await names(cond('name', 'neq', 'beta'))).toEqual(['r1', 'r3', 'r4', 'r5']);
    expect(await names(cond('name', 'gt', 'beta'))).toEqual(['r5']);
    expect(await names(cond('name', 'gte', 'beta'))).toEqual(['r2', 'r5']);
    expect(await names(cond('name', 'lt', 'Gamma'))).toEqual(['r1']);
    expect(await names(cond('name', 'lte', 'Alpha'))).toEqual(['r1']);
    expect(await names(cond('name', 'contains', 'MM'))).toEqual(['r3']);
    expect(await names(cond('name', 'contains', '%'))).toEqual(['r3']);
    expect(await names(cond('name', 'contains', '_'))).toEqual(['r5']);
    expect(await names(cond('name', 'not_contains', 'a'))).toEqual(['r4', 'r5']);
    expect(await names(cond('name', 'starts_with', 'al'))).toEqual(['r1']);
    expect(await names(cond('name', 'ends_with', 'ETA'))).toEqual(['r2']);
    expect(await names(cond('name', 'in', ['Alpha', 'beta', 'zeta']))).toEqual(['r1', 'r2']);
    expect(await names(cond('name', 'not_in', ['Alpha', 'beta']))).toEqual(['r3', 'r4', 'r5']);
    expect(await names(cond('name', 'is_null'))).toEqual(['r4']);
    expect(await names(cond('name', 'is_not_null'))).toEqual(['r1', 'r2', 'r3', 'r5']);
  });

  it('handles nulls as the contract states', async () => {
    expect(await names(cond('n', 'eq', null))).toEqual(['r4']);
    expect(await names(cond('n', 'neq', null))).toEqual(['r1', 'r2', 'r3', 'r5']);
    expect(await names(cond('n', 'neq', 1))).toEqual(['r2', 'r3', 'r4', 'r5']);
    expect(await names(cond('n', 'not_in', [1, 2]))).toEqual(['r3', 'r4', 'r5']);
    expect(await names(cond('n', 'in', [1, null]))).toEqual(['r1', 'r4']);
    expect(await names(cond('n', 'not_in', [1, null]))).toEqual(['r2', 'r3', 'r5']);
    expect(await names(cond('n', 'in', []))).toEqual([]);
    expect(await names(cond('n', 'not_in', []))).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
    expect(await names(cond('n', 'gt', 0))).toEqual(['r1', 'r2', 'r3']);
    expect(await names(cond('ok', 'neq', true))).toEqual(['r2', 'r3', 'r5']);
    expect(await names(cond('stage', 'not_contains', 'a'))).toEqual(['r2', 'r3', 'r4']);
  });

  it('filters numbers, booleans, datetimes, selects, urls, emails and json', async () => {
    expect(await names(cond('n', 'gte', 2))).toEqual(['r2', 'r3']);
    expect(await names(cond('n', 'lt', 1))).toEqual(['r5']);
    expect(await names(cond('n', 'lte', 1))).toEqual(['r1', 'r5']);
    expect(await names(cond('n', 'eq', 3.5))).toEqual(['r3']);
    expect(await names(cond('ok', 'eq', true))).toEqual(['r1', 'r4']);
    expect(await names(cond('ok', 'in', [false]))).toEqual(['r2', 'r5']);
    expect(await names(cond('ok', 'is_null'))).toEqual(['r3']);
    expect(await names(cond('at', 'gte', '2024-02-01'))).toEqual(['r2', 'r3']);
    expect(await names(cond('at', 'lt', '2024-01-01T00:00:00.000Z'))).toEqual(['r5']);
    expect(await names(cond('at', 'eq', '2024-03-01T13:00:00+01:00'))).toEqual(['r3']);
    expect(await names(cond('at', 'in', ['2024-01-01T00:00:00Z', '2024-02-01T00:00:00Z']))).toEqual(['r1', 'r2']);
    expect(await names(cond('stage', 'eq', 'a'))).toEqual(['r1', 'r5']);
    expect(await names(cond('stage', 'in', ['b', 'c']))).toEqual(['r2', 'r3']);
    expect(await names(cond('stage', 'starts_with', 'A'))).toEqual(['r1', 'r5']);
    expect(await names(cond('site', 'contains', 'EXAMPLE.com/'))).toEqual(['r2']);
    expect(await names(cond('site', 'starts_with', 'https://'))).toEqual(['r1']);
    expect(await names(cond('mail', 'ends_with', '@y.IO'))).toEqual(['r2']);
    expect(await names(cond('mail', 'eq', 'a@x.io'))).toEqual(['r1']);
    expect(await names(cond('data', 'eq', { k: 1 }))).toEqual(['r1']);
    expect(await names(cond('data', 'eq', [1, 2]))).toEqual(['r2']);
    expect(await names(cond('data', 'eq', 'text'))).toEqual(['r3']);
    expect(await names(cond('data', 'neq', 'text'))).toEqual(['r1', 'r2', 'r4', 'r5']);
    expect(await names(cond('data', 'is_null'))).toEqual(['r4', 'r5']);
  });

  it('filters and sorts by id, created_at and updated_at', async () => {
    const first = rows[0] as Row;
    expect(await names(cond('id', 'eq', first.id))).toEqual(['r1']);
    expect(await names(cond('id', 'in', [first.id, (rows[1] as Row).id]))).toEqual(['r1', 'r2']);
    expect(await names(cond('created_at', 'eq', first._meta.created_at))).toHaveLength(5);
    expect(await names(cond('created_at', 'gt', first._meta.created_at))).toEqual([]);
    const patched = await ctx.call('PATCH', `/v1/tables/${tableId}/rows/${first.id}`, { body: { n: 1 } });
    const updatedAt = patched.json()._meta.updated_at;
    expect(await names(cond('updated_at', 'gte', updatedAt))).toEqual(['r1']);
    const byUpdated = await query(ctx, tableId, { sort_by: 'updated_at', sort_direction: 'desc', limit: 1 });
    expect(byUpdated.rows[0]?.label).toBe('r1');
    const byId = await query(ctx, tableId, { sort_by: 'id', sort_direction: 'asc' });
    expect(byId.rows.map((r) => r.id)).toEqual(rows.map((r) => r.id).sort());
  });

  it('nests and/or groups up to 5 levels', async () => {
    const filter = {
      or: [
        { and: [cond('n', 'gte', 2).and[0], { or: [{ column: 'stage', operator: 'eq', value: 'c' }] }] },
        {
          and: [
            { column: 'ok', operator: 'eq', value: true },
            { column: 'name', operator: 'is_null' },
          ],
        },
      ],
    };
    expect(await names(filter)).toEqual(['r3', 'r4']);
    const deep = { and: [{ or: [{ and: [{ or: [{ column: 'n', operator: 'eq', value: 1 }] }] }] }] };
    expect(await names(deep)).toEqual(['r1']);
    expect(await names({ and: [] })).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
    expect(await names({ or: [] })).toEqual([]);

    const five = { and: [{ or: [{ and: [{ or: [{ and: [{ column: 'n', operator: 'eq', value: 1 }] }] }] }] }] };
    expect(await names(five)).toEqual(['r1']);
    const tooDeep = {
      and: [{ or: [{ and: [{ or: [{ and: [{ or: [{ column: 'n', operator: 'eq', value: 1 }] }] }] }] }] }],
    };
    const response = await ctx.call('POST', `/v1/tables/${tableId}/query`, { body: { filter: tooDeep } });
    expect(expectError(response, 400).message).toBe(
      'filter.and[0].or[0].and[0].or[0].and[0]: groups may nest at most 5 levels deep',
    );
    const many = { and: Array.from({ length: 101 }, () => ({ column: 'n', operator: 'gt', value: 0 })) };
    const tooMany = await ctx.call('POST', `/v1/tables/${tableId}/query`, { body: { filter: many } });
    expect(expectError(tooMany, 400).message).toBe('filter: at most 100 conditions are allowed');
    const hundred = { and: Array.from({ length: 100 }, () => ({ column: 'n', operator: 'gt', value: 0 })) };
    expect(await names(hundred)).toEqual(['r1', 'r2', 'r3']);
  });

  it('answers clear 400s naming the column and operator', async () => {
    const cases: Array<[unknown, string]> = [
      [cond('nope', 'eq', 1), 'filter.and[0]: unknown column "nope" (operator "eq")'],
      [
        cond('ok', 'gt', true),
        'filter.and[0]: operator "gt" does not apply to column "ok" of type boolean; use one of eq, neq, in, not_in, is_null, is_not_null',
      ],
      [
        cond('n', 'contains', '1'),
        'filter.and[0]: operator "contains" does not apply to column "n" of type number; use one of eq, neq, gt, gte, lt, lte, in, not_in, is_null, is_not_null',
      ],
      [
        cond('stage', 'gt', 'a'),
        'filter.and[0]: operator "gt" does not apply to column "stage" of type select; use one of eq, neq, contains, not_contains, starts_with, ends_with, in, not_in, is_null, is_not_null',
      ],
      [
        cond('data', 'in', [1]),
        'filter.and[0]: operator "in" does not apply to column "data" of type json; use one of eq, neq, is_null, is_not_null',
      ],
      [
        cond('n', 'like', 1),
        'filter.and[0]: unknown operator "like" (column "n"); use one of eq, neq, gt, gte, lt, lte, in, not_in, is_null, is_not_null',
      ],
      [cond('n', 'gte', '5'), 'filter.and[0].value: operator "gte" on column "n" (number) needs a finite number'],
      [cond('n', 'gte'), 'filter.and[0].value: operator "gte" on column "n" (number) needs a value'],
      [cond('n', 'gt', null), 'filter.and[0].value: operator "gt" on column "n" (number) needs a non-null value'],
      [cond('n', 'in', 1), 'filter.and[0].value: operator "in" on column "n" (number) needs an array'],
      [cond('n', 'in', ['x']), 'filter.and[0].value: operator "in" on column "n" (number) needs a finite number'],
      [cond('n', 'is_null', 1), 'filter.and[0].value: operator "is_null" on column "n" (number) takes no value'],
      [
        cond('at', 'gt', 'soon'),
        'filter.and[0].value: operator "gt" on column "at" (datetime) needs an ISO 8601 date-time string',
      ],
      [cond('ok', 'eq', 'true'), 'filter.and[0].value: operator "eq" on column "ok" (boolean) needs true or false'],
      [cond('name', 'contains', 5), 'filter.and[0].value: operator "contains" on column "name" (text) needs a string'],
      [{ column: 'n', operator: 'eq', value: 1 }, 'filter: must be an object with an "and" or an "or" array'],
      [{ and: {} }, 'filter.and: must be an array'],
      [{ and: [], or: [] }, 'filter: a group takes either "and" or "or", not both'],
      [{ and: [], not: [] }, 'filter: unknown field "not" in a group'],
      [{ and: ['n'] }, 'filter.and[0]: must be a condition {column, operator, value} or a group {and|or: [...]}'],
      [
        { and: [{ column: 'n', operator: 'eq', value: 1, extra: 2 }] },
        'filter.and[0]: unknown field "extra" in a condition',
      ],
      [{ and: [{ operator: 'eq', value: 1 }] }, 'filter.and[0].column: must be a string'],
      [{ or: [{ and: [{ column: 'n', value: 1 }] }] }, 'filter.or[0].and[0].operator: must be a string (column "n")'],
    ];
    for (const [filter, message] of cases) {
      const response = await ctx.call('POST', `/v1/tables/${tableId}/query`, { body: { filter } });
      expect(expectError(response, 400), JSON.stringify(filter)).toEqual({ message, code: 'bad_request' });
    }
  });

  it('sorts by any column, asc or desc (default desc), nulls last ascending and first descending', async () => {
    const asc = await query(ctx, tableId, { sort_by: 'n', sort_direction: 'asc' });
    expect(asc.rows.map((r) => r.label)).toEqual(['r5', 'r1', 'r2', 'r3', 'r4']);
    const desc = await query(ctx, tableId, { sort_by: 'n' });
    expect(desc.rows.map((r) => r.label)).toEqual(['r4', 'r3', 'r2', 'r1', 'r5']);
    const byName = await query(ctx, tableId, { sort_by: 'name', sort_direction: 'asc' });
    expect(byName.rows.map((r) => r.label)).toEqual(['r1', 'r3', 'r2', 'r5', 'r4']);
    const byAt = await query(ctx, tableId, {
      sort_by: 'at',
      sort_direction: 'asc',
      filter: cond('at', 'is_not_null'),
    });
    expect(byAt.rows.map((r) => r.label)).toEqual(['r5', 'r1', 'r2', 'r3']);
    const unknown = await ctx.call('POST', `/v1/tables/${tableId}/query`, { body: { sort_by: 'nope' } });
    expect(expectError(unknown, 400).message).toBe('sort_by: unknown column "nope"');
    const badDirection = await ctx.call('POST', `/v1/tables/${tableId}/query`, { body: { sort_direction: 'up' } });
    expect(expectError(badDirection, 400).message).toMatch(/^sort_direction/);
  });

  it('paginates: limit and offset, clamps above 1000, refuses negative and non-numeric values', async () => {
    const page = await query(ctx, tableId, { sort_by: 'label', sort_direction: 'asc', limit: 2, offset: 2 });
    expect(page).toMatchObject({ total: 5, limit: 2, offset: 2 });
    expect(page.rows.map((r) => r.label)).toEqual(['r3', 'r4']);
    const clamped = await query(ctx, tableId, { limit: 5000 });
    expect(clamped.limit).toBe(1000);
    expect(clamped.rows).toHaveLength(5);
    const zero = await query(ctx, tableId, { limit: 0 });
    expect(zero).toMatchObject({ rows: [], total: 5, limit: 0 });
    const beyond = await query(ctx, tableId, { offset: 10 });
    expect(beyond).toMatchObject({ rows: [], total: 5, offset: 10 });
    for (const body of [{ limit: -1 }, { limit: 'ten' }, { limit: 1.5 }, { offset: -1 }, { offset: 'x' }]) {
      const response = await ctx.call('POST', `/v1/tables/${tableId}/query`, { body });
      const error = expectError(response, 400);
      expect(error.code).toBe('bad_request');
      expect(error.message, JSON.stringify(body)).toMatch(Object.keys(body)[0] as string);
    }
    const unknown = await ctx.call('POST', `/v1/tables/${tableId}/query`, { body: { page: 2 } });
    expect(expectError(unknown, 400).message).toMatch(/page/);
  });
});
