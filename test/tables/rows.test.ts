import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createTestContext, type TestContext } from '../helpers/app.js';
import { createTable, expectError, insertRows, query } from './helpers.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('rows', () => {
  let ctx: TestContext;
  let table: { id: string };
  beforeAll(async () => {
    ctx = await createTestContext();
    table = await createTable(ctx, {
      name: 'People',
      columns: [
        { name: 'name', type: 'text', required: true },
        { name: 'age', type: 'number' },
        { name: 'active', type: 'boolean' },
        { name: 'born', type: 'datetime' },
        { name: 'stage', type: 'select', options: ['lead', 'customer'] },
        { name: 'site', type: 'url' },
        { name: 'mail', type: 'email' },
        { name: 'extra', type: 'json' },
      ],
    });
  });
  afterAll(() => ctx.close());

  const rowCount = async (id: string) => (await ctx.call('GET', `/v1/tables/${id}`)).json().row_count;

  it('inserts one row and answers 201 with the Row', async () => {
    const response = await ctx.call('POST', `/v1/tables/${table.id}/rows`, {
      body: {
        name: 'Ada',
        age: 36,
        active: true,
        born: '1815-12-10T08:30:00+01:00',
        stage: 'lead',
        site: 'https://example.com/ada',
        mail: 'ada@example.com',
        extra: { languages: ['en', 'fr'], score: 1.5, nested: { ok: true } },
      },
    });
    expect(response.statusCode, response.body).toBe(201);
    const row = response.json();
    expect(row).toEqual({
      id: expect.stringMatching(/^row_[a-z0-9]{24}$/),
      name: 'Ada',
      age: 36,
      active: true,
      born: '1815-12-10T07:30:00.000Z',
      stage: 'lead',
      site: 'https://example.com/ada',
      mail: 'ada@example.com',
      extra: { languages: ['en', 'fr'], score: 1.5, nested: { ok: true } },
      _meta: {
        created_at: expect.stringMatching(ISO_MS),
        created_by: 'api:admin',
        updated_at: expect.stringMatching(ISO_MS),
        updated_by: 'api:admin',
      },
    });
    expect(Object.keys(row)).toEqual([
      'id',
      'name',
      'age',
      'active',
      'born',
      'stage',
      'site',
      'mail',
      'extra',
      '_meta',
    ]);
    const fetched = await ctx.call('GET', `/v1/tables/${table.id}/rows/${row.id}`);
    expect(fetched.statusCode).toBe(200);
    expect(fetched.json()).toEqual(row);
  });

  it('fills columns left out with null', async () => {
    const response = await ctx.call('POST', `/v1/tables/${table.id}/rows`, { body: { name: 'Bare' } });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({ name: 'Bare', age: null, active: null, born: null, extra: null });
  });

  it('inserts a batch, all or nothing, and keeps row_count exact', async () => {
    const t = await createTable(ctx, { name: 'Batch', columns: [{ name: 'n', type: 'number', required: true }] });
    const rows = await insertRows(
      ctx,
      t.id,
      Array.from({ length: 1000 }, (_, i) => ({ n: i })),
    );
    expect(rows).toHaveLength(1000);
    expect(rows.map((r) => r.n)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(new Set(rows.map((r) => r.id)).size).toBe(1000);
    expect(await rowCount(t.id)).toBe(1000);

    const bad = await ctx.call('POST', `/v1/tables/${t.id}/rows`, { body: [{ n: 1 }, { n: 2 }, { n: 'three' }] });
    expect(expectError(bad, 400)).toEqual({
      message: 'body[2]: column "n" must be a finite number',
      code: 'bad_request',
    });
    const missing = await ctx.call('POST', `/v1/tables/${t.id}/rows`, { body: [{ n: 1 }, {}] });
    expect(expectError(missing, 400).message).toBe('body[1]: column "n" is required');
    expect(await rowCount(t.id)).toBe(1000);

    const empty = await ctx.call('POST', `/v1/tables/${t.id}/rows`, { body: [] });
    expect(expectError(empty, 400).message).toMatch(/1 to 1000 rows/);
    const tooMany = await ctx.call('POST', `/v1/tables/${t.id}/rows`, {
      body: Array.from({ length: 1001 }, () => ({ n: 1 })),
    });
    expect(expectError(tooMany, 400).message).toMatch(/1 to 1000 rows \(got 1001\)/);
    const notRow = await ctx.call('POST', `/v1/tables/${t.id}/rows`, { body: [{ n: 1 }, 5] });
    expect(expectError(notRow, 400).message).toBe('body[1]: must be a row object');
    const scalar = await ctx.call('POST', `/v1/tables/${t.id}/rows`, { body: 'x' as unknown as object });
    expect(expectError(scalar, 400).code).toBe('bad_request');
    expect(await rowCount(t.id)).toBe(1000);
  });

  it('validates every type on insert, naming the column', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ age: 5 }, 'column "name" is required'],
      [{ name: null }, 'column "name" is required'],
      [{ name: 5 }, 'column "name" must be a string'],
      [{ name: 'x', age: '5' }, 'column "age" must be a finite number'],
      [{ name: 'x', active: 'yes' }, 'column "active" must be true or false'],
      [{ name: 'x', active: 1 }, 'column "active" must be true or false'],
      [{ name: 'x', born: 'yesterday' }, 'column "born" must be an ISO 8601 date-time string'],
      [{ name: 'x', born: '2024-02-30' }, 'column "born" must be an ISO 8601 date-time string'],
      [{ name: 'x', born: '2024-01-01T25:00:00Z' }, 'column "born" must be an ISO 8601 date-time string'],
      [{ name: 'x', born: 1700000000000 }, 'column "born" must be an ISO 8601 date-time string'],
      [{ name: 'x', stage: 'prospect' }, 'column "stage" must be one of the column\'s options ("lead", "customer")'],
      [{ name: 'x', site: 'example.com' }, 'column "site" must be an absolute http or https URL'],
      [{ name: 'x', site: 'ftp://example.com' }, 'column "site" must be an absolute http or https URL'],
      [{ name: 'x', mail: 'not-an-address' }, 'column "mail" must be an email address'],
      [{ name: 'x', mail: 'a@b' }, 'column "mail" must be an email address'],
      [{ name: 'x', nope: 1 }, 'unknown column "nope"'],
      [{ name: 'x', id: 'row_mine' }, '"id" is set by the service and cannot be written'],
      [{ name: 'x', _meta: {} }, '"_meta" is set by the service and cannot be written'],
    ];
    for (const [body, message] of cases) {
      const response = await ctx.call('POST', `/v1/tables/${table.id}/rows`, { body });
      expect(expectError(response, 400), JSON.stringify(body)).toEqual({ message, code: 'bad_request' });
    }
  });

  it('refuses the NUL character, which PostgreSQL cannot store', async () => {
    for (const body of [{ name: 'a\u0000b' }, { name: 'x', extra: { bad: 'a\u0000' } }]) {
      const response = await ctx.call('POST', `/v1/tables/${table.id}/rows`, { body });
      expect(expectError(response, 400).message).toMatch(/NUL character/);
    }
  });

  it('accepts the value forms the contract allows', async () => {
    const [row] = await insertRows(ctx, table.id, [
      {
        name: '',
        age: -0.000001,
        active: false,
        born: '2024-02-29',
        site: 'http://localhost:8080/x?y=1#z',
        mail: 'first.last+tag@sub.example.org',
        extra: 'just a string',
      },
      { name: 'y', born: '2024-06-01T12:00:00', extra: [1, 'two', null] },
      { name: 'z', born: '2024-06-01T12:00:00.123456-05:30', extra: 0 },
    ]);
    expect(row).toMatchObject({
      age: -0.000001,
      active: false,
      born: '2024-02-29T00:00:00.000Z',
      extra: 'just a string',
    });
    const all = await query(ctx, table.id, {
      filter: { and: [{ column: 'name', operator: 'in', value: ['y', 'z'] }] },
    });
    const byName = new Map(all.rows.map((r) => [r.name, r]));
    expect(byName.get('y')).toMatchObject({ born: '2024-06-01T12:00:00.000Z', extra: [1, 'two', null] });
    expect(byName.get('z')).toMatchObject({ born: '2024-06-01T17:30:00.123Z', extra: 0 });
  });

  it('updates a row: only the given columns change, and _meta moves', async () => {
    const writer = await createKey(ctx, 'writer', 'member');
    const [row] = await insertRows(ctx, table.id, [{ name: 'Grace', age: 40, stage: 'lead' }]);
    const response = await ctx.call('PATCH', `/v1/tables/${table.id}/rows/${row?.id}`, {
      key: writer,
      body: { age: 41, stage: null },
    });
    expect(response.statusCode, response.body).toBe(200);
    const updated = response.json();
    expect(updated).toMatchObject({ id: row?.id, name: 'Grace', age: 41, stage: null });
    const before = row?._meta as { created_at: string; updated_at: string };
    expect(updated._meta.created_at).toBe(before.created_at);
    expect(updated._meta.created_by).toBe('api:admin');
    expect(updated._meta.updated_by).toBe('api:writer');
    expect(updated._meta.updated_at > before.updated_at).toBe(true);

    const again = await ctx.call('PATCH', `/v1/tables/${table.id}/rows/${row?.id}`, { body: { age: 42 } });
    expect(again.json()._meta.updated_at > updated._meta.updated_at).toBe(true);
    expect(again.json()._meta.updated_by).toBe('api:admin');
    const fetched = await ctx.call('GET', `/v1/tables/${table.id}/rows/${row?.id}`);
    expect(fetched.json()).toEqual(again.json());
  });

  it('refuses bad row updates', async () => {
    const [row] = await insertRows(ctx, table.id, [{ name: 'Linus' }]);
    const url = `/v1/tables/${table.id}/rows/${row?.id}`;
    const cases: Array<[unknown, string]> = [
      [{ id: 'row_other' }, '"id" is set by the service and cannot be written'],
      [{ _meta: { created_by: 'x' } }, '"_meta" is set by the service and cannot be written'],
      [{ name: null }, 'column "name" is required and cannot be null'],
      [{ age: 'old' }, 'column "age" must be a finite number'],
      [{ nope: 1 }, 'unknown column "nope"'],
      [[{ name: 'x' }], 'body must be an object of column values'],
    ];
    for (const [body, message] of cases) {
      const response = await ctx.call('PATCH', url, { body });
      expect(expectError(response, 400), JSON.stringify(body)).toEqual({ message, code: 'bad_request' });
    }
    const unchanged = await ctx.call('PATCH', url, { body: {} });
    expect(unchanged.statusCode).toBe(200);
    expect(unchanged.json()).toEqual(row);
  });

  it('answers 404 Row not found for unknown rows', async () => {
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { age: 1 }],
      ['PATCH', {}],
      ['DELETE', undefined],
    ] as const) {
      const response = await ctx.call(method, `/v1/tables/${table.id}/rows/row_missing`, body ? { body } : {});
      expect(expectError(response, 404), method).toEqual({ message: 'Row not found', code: 'not_found' });
    }
  });

  it('deletes a row and keeps row_count exact', async () => {
    const t = await createTable(ctx, { name: 'Deletes', columns: [{ name: 'n', type: 'number' }] });
    const rows = await insertRows(ctx, t.id, [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const gone = await ctx.call('DELETE', `/v1/tables/${t.id}/rows/${rows[1]?.id}`);
    expect(gone.statusCode).toBe(200);
    expect(gone.json()).toEqual({ success: true });
    expect(await rowCount(t.id)).toBe(2);
    const twice = await ctx.call('DELETE', `/v1/tables/${t.id}/rows/${rows[1]?.id}`);
    expect(expectError(twice, 404).message).toBe('Row not found');
    expect(await rowCount(t.id)).toBe(2);
    const fetched = await ctx.call('GET', `/v1/tables/${t.id}/rows/${rows[1]?.id}`);
    expect(expectError(fetched, 404).message).toBe('Row not found');
  });

  it('updates rows by filter', async () => {
    const t = await createTable(ctx, {
      name: 'Bulk',
      columns: [
        { name: 'n', type: 'number' },
        { name: 'tag', type: 'text' },
      ],
    });
    const rows = await insertRows(
      ctx,
      t.id,
      Array.from({ length: 10 }, (_, i) => ({ n: i })),
    );
    const response = await ctx.call('PATCH', `/v1/tables/${t.id}/rows`, {
      body: { filter: { and: [{ column: 'n', operator: 'gte', value: 6 }] }, update: { tag: 'high' } },
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ updated: 4 });
    const high = await query(ctx, t.id, { filter: { and: [{ column: 'tag', operator: 'eq', value: 'high' }] } });
    expect(high.total).toBe(4);
    const changed = high.rows[0] as { _meta: { updated_at: string; created_at: string } };
    expect(changed._meta.updated_at > changed._meta.created_at).toBe(true);
    const untouched = await ctx.call('GET', `/v1/tables/${t.id}/rows/${rows[0]?.id}`);
    expect(untouched.json()._meta.updated_at).toBe(untouched.json()._meta.created_at);

    const none = await ctx.call('PATCH', `/v1/tables/${t.id}/rows`, {
      body: { filter: { and: [{ column: 'n', operator: 'gt', value: 100 }] }, update: { tag: 'x' } },
    });
    expect(none.json()).toEqual({ updated: 0 });

    const cases: Array<[unknown, RegExp]> = [
      [{ update: { tag: 'x' } }, /^filter is required$/],
      [{ filter: { and: [] } }, /^update is required$/],
      [{ filter: { and: [] }, update: {} }, /^update must name at least one column$/],
      [{ filter: { and: [] }, update: { n: 'x' } }, /^update: column "n" must be a finite number$/],
      [{ filter: { and: [] }, update: { id: 'x' } }, /^update: "id" is set by the service/],
      [{ filter: { and: [{ column: 'zz', operator: 'eq', value: 1 }] }, update: { n: 1 } }, /unknown column "zz"/],
      [{ filter: { and: [] }, update: { n: 1 }, extra: 1 }, /extra/],
    ];
    for (const [body, pattern] of cases) {
      const bad = await ctx.call('PATCH', `/v1/tables/${t.id}/rows`, { body });
      expect(expectError(bad, 400).message, JSON.stringify(body)).toMatch(pattern);
    }
  });

  it('deletes rows by filter and keeps row_count exact', async () => {
    const t = await createTable(ctx, { name: 'Bulk delete', columns: [{ name: 'n', type: 'number' }] });
    await insertRows(
      ctx,
      t.id,
      Array.from({ length: 20 }, (_, i) => ({ n: i % 5 === 0 ? null : i })),
    );
    const response = await ctx.call('DELETE', `/v1/tables/${t.id}/rows`, {
      body: {
        filter: {
          or: [
            { column: 'n', operator: 'lt', value: 5 },
            { column: 'n', operator: 'is_null' },
          ],
        },
      },
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ deleted: 8 });
    expect(await rowCount(t.id)).toBe(12);
    const rest = await query(ctx, t.id, {});
    expect(rest.total).toBe(12);
    const missing = await ctx.call('DELETE', `/v1/tables/${t.id}/rows`, { body: {} });
    expect(expectError(missing, 400).message).toBe('filter is required');
    const all = await ctx.call('DELETE', `/v1/tables/${t.id}/rows`, { body: { filter: { and: [] } } });
    expect(all.json()).toEqual({ deleted: 12 });
    expect(await rowCount(t.id)).toBe(0);
  });

  it('keeps row_count exact under concurrent writes', async () => {
    const t = await createTable(ctx, { name: 'Concurrent', columns: [{ name: 'n', type: 'number' }] });
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        insertRows(
          ctx,
          t.id,
          Array.from({ length: 25 }, (_, j) => ({ n: i * 100 + j })),
        ),
      ),
    );
    const deletes = await Promise.all([
      ctx.call('DELETE', `/v1/tables/${t.id}/rows`, {
        body: { filter: { and: [{ column: 'n', operator: 'lt', value: 100 }] } },
      }),
      ctx.call('DELETE', `/v1/tables/${t.id}/rows`, {
        body: { filter: { and: [{ column: 'n', operator: 'lt', value: 200 }] } },
      }),
    ]);
    const deleted = deletes.reduce((sum, r) => sum + r.json().deleted, 0);
    expect(deleted).toBe(50);
    expect(await rowCount(t.id)).toBe(150);
    expect((await query(ctx, t.id, { limit: 0 })).total).toBe(150);
  });
});
