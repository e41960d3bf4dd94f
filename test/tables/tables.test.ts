import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createTestContext, type TestContext } from '../helpers/app.js';
import { createTable, expectError, insertRows, otherOrganization } from './helpers.js';

describe('tables', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('creates a table with required filled in, row_count 0 and description null', async () => {
    const table = await createTable(ctx, {
      name: 'Contacts',
      columns: [
        { name: 'name', type: 'text', required: true },
        { name: 'age', type: 'number' },
        { name: 'stage', type: 'select', options: ['lead', 'customer'] },
      ],
    });
    expect(table).toEqual({
      id: expect.stringMatching(/^tbl_[a-z0-9]{24}$/),
      name: 'Contacts',
      description: null,
      columns: [
        { name: 'name', type: 'text', required: true },
        { name: 'age', type: 'number', required: false },
        { name: 'stage', type: 'select', required: false, options: ['lead', 'customer'] },
      ],
      row_count: 0,
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      updated_at: expect.any(String),
    });
    const fetched = await ctx.call('GET', `/v1/tables/${table.id}`);
    expect(fetched.statusCode).toBe(200);
    expect(fetched.json()).toEqual(table);
  });

  it('accepts every column type', async () => {
    const types = ['text', 'number', 'boolean', 'datetime', 'select', 'url', 'email', 'json'];
    const table = await createTable(ctx, {
      name: 'All types',
      description: 'one of each',
      columns: types.map((type) => ({ name: `c_${type}`, type, ...(type === 'select' ? { options: ['x'] } : {}) })),
    });
    expect(table.columns.map((c: { type: string }) => c.type)).toEqual(types);
    expect(table.description).toBe('one of each');
  });

  it('refuses a duplicate name with 409, also on rename', async () => {
    await createTable(ctx, { name: 'Dup', columns: [] });
    const again = await ctx.call('POST', '/v1/tables', { body: { name: 'Dup', columns: [] } });
    expect(expectError(again, 409)).toEqual({ message: 'Table "Dup" already exists', code: 'conflict' });

    const other = await createTable(ctx, { name: 'Other', columns: [] });
    const rename = await ctx.call('PATCH', `/v1/tables/${other.id}`, { body: { name: 'Dup' } });
    expect(expectError(rename, 409)).toEqual({ message: 'Table "Dup" already exists', code: 'conflict' });
    const unchanged = await ctx.call('GET', `/v1/tables/${other.id}`);
    expect(unchanged.json().name).toBe('Other');
  });

  it('lets two organizations use the same name and hides each other’s tables', async () => {
    const otherKey = await otherOrganization(ctx, 'acme-tables');
    const mine = await createTable(ctx, { name: 'Shared name', columns: [{ name: 'a', type: 'text' }] });
    const theirs = await createTable(ctx, { name: 'Shared name', columns: [] }, otherKey);
    expect(theirs.id).not.toBe(mine.id);
    await insertRows(ctx, mine.id, [{ a: 'secret' }]);

    for (const [method, url, body] of [
      ['GET', `/v1/tables/${mine.id}`, undefined],
      ['PATCH', `/v1/tables/${mine.id}`, { name: 'x' }],
      ['DELETE', `/v1/tables/${mine.id}`, undefined],
      ['POST', `/v1/tables/${mine.id}/query`, {}],
      ['POST', `/v1/tables/${mine.id}/rows`, { a: 'b' }],
      ['PATCH', `/v1/tables/${mine.id}/rows`, { filter: { and: [] }, update: { a: 'x' } }],
      ['DELETE', `/v1/tables/${mine.id}/rows`, { filter: { and: [] } }],
    ] as const) {
      const response = await ctx.call(method, url, { key: otherKey, ...(body ? { body } : {}) });
      expect(expectError(response, 404), `${method} ${url}`).toEqual({ message: 'Table not found', code: 'not_found' });
    }
    const list = await ctx.call('GET', '/v1/tables?limit=1000', { key: otherKey });
    expect(list.json().tables.map((t: { id: string }) => t.id)).toEqual([theirs.id]);
    const still = await ctx.call('GET', `/v1/tables/${mine.id}`);
    expect(still.json().row_count).toBe(1);
  });

  it('answers 404 Table not found for an unknown id', async () => {
    for (const [method, url] of [
      ['GET', '/v1/tables/tbl_nope'],
      ['DELETE', '/v1/tables/tbl_nope'],
      ['GET', '/v1/tables/tbl_nope/rows/row_x'],
    ] as const) {
      const response = await ctx.call(method, url);
      expect(expectError(response, 404)).toEqual({ message: 'Table not found', code: 'not_found' });
    }
  });

  it('updates name and description; null clears the description', async () => {
    const table = await createTable(ctx, { name: 'Before', description: 'd', columns: [] });
    const renamed = await ctx.call('PATCH', `/v1/tables/${table.id}`, { body: { name: '  After  ' } });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json()).toMatchObject({ name: 'After', description: 'd' });
    expect(renamed.json().updated_at >= table.updated_at).toBe(true);
    const cleared = await ctx.call('PATCH', `/v1/tables/${table.id}`, { body: { description: null } });
    expect(cleared.json().description).toBeNull();
    const same = await ctx.call('PATCH', `/v1/tables/${table.id}`, { body: { name: 'After' } });
    expect(same.statusCode).toBe(200);
  });

  it('deletes a table with its rows', async () => {
    const table = await createTable(ctx, { name: 'Doomed', columns: [{ name: 'a', type: 'number' }] });
    await insertRows(ctx, table.id, [{ a: 1 }, { a: 2 }]);
    const gone = await ctx.call('DELETE', `/v1/tables/${table.id}`);
    expect(gone.statusCode).toBe(200);
    expect(gone.json()).toEqual({ success: true });
    expect(expectError(await ctx.call('GET', `/v1/tables/${table.id}`), 404).message).toBe('Table not found');
    expect(expectError(await ctx.call('DELETE', `/v1/tables/${table.id}`), 404).message).toBe('Table not found');
    // The name is free again.
    await createTable(ctx, { name: 'Doomed', columns: [] });
  });

  it('lets member keys use tables', async () => {
    const member = await createKey(ctx, 'table-member', 'member');
    const table = await createTable(ctx, { name: 'Member made', columns: [] }, member);
    expect(table.name).toBe('Member made');
  });

  it('lists tables newest first with limit and offset; clamps the limit and refuses bad values', async () => {
    const otherKey = await otherOrganization(ctx, 'list-org');
    const made = [];
    for (const name of ['l1', 'l2', 'l3']) made.push(await createTable(ctx, { name, columns: [] }, otherKey));
    const all = await ctx.call('GET', '/v1/tables', { key: otherKey });
    expect(all.json()).toMatchObject({ limit: 50, offset: 0 });
    expect(all.json().tables.map((t: { name: string }) => t.name)).toEqual(['l3', 'l2', 'l1']);
    const page = await ctx.call('GET', '/v1/tables?limit=1&offset=1', { key: otherKey });
    expect(page.json().tables.map((t: { name: string }) => t.name)).toEqual(['l2']);
    const clamped = await ctx.call('GET', '/v1/tables?limit=5000', { key: otherKey });
    expect(clamped.json().limit).toBe(1000);
    for (const bad of ['limit=-1', 'limit=abc', 'offset=-5', 'offset=x']) {
      const response = await ctx.call('GET', `/v1/tables?${bad}`, { key: otherKey });
      const error = expectError(response, 400);
      expect(error.code).toBe('bad_request');
      expect(error.message).toMatch(bad.split('=')[0] as string);
    }
  });

  it('validates table bodies with messages naming the field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ columns: [] }, /name/],
      [{ name: '   ', columns: [] }, /name/],
      [{ name: 'x'.repeat(201), columns: [] }, /name/],
      [{ name: 'no columns' }, /columns/],
      [{ name: 'bad type', columns: [{ name: 'a', type: 'money' }] }, /columns\.0\.type/],
      [{ name: 'reserved', columns: [{ name: 'id', type: 'text' }] }, /columns\.0\.name.*reserved/],
      [{ name: 'reserved2', columns: [{ name: '_meta', type: 'text' }] }, /reserved/],
      [{ name: 'reserved3', columns: [{ name: 'created_at', type: 'text' }] }, /reserved/],
      [{ name: 'empty col', columns: [{ name: '', type: 'text' }] }, /columns\.0\.name/],
      [{ name: 'long col', columns: [{ name: 'c'.repeat(101), type: 'text' }] }, /columns\.0\.name/],
      [
        {
          name: 'dup col',
          columns: [
            { name: 'a', type: 'text' },
            { name: 'a', type: 'number' },
          ],
        },
        /columns\.1\.name: duplicate column name "a"/,
      ],
      [{ name: 'no options', columns: [{ name: 's', type: 'select' }] }, /columns\.0\.options/],
      [{ name: 'dup options', columns: [{ name: 's', type: 'select', options: ['a', 'a'] }] }, /duplicate option/],
      [{ name: 'options on text', columns: [{ name: 't', type: 'text', options: ['a'] }] }, /only select columns/],
      [{ name: 'extra', columns: [], colour: 'red' }, /colour/],
      [
        { name: 'too many', columns: Array.from({ length: 201 }, (_, i) => ({ name: `c${i}`, type: 'text' })) },
        /columns.*200/,
      ],
    ];
    for (const [body, pattern] of cases) {
      const response = await ctx.call('POST', '/v1/tables', { body });
      const error = expectError(response, 400);
      expect(error.code).toBe('bad_request');
      expect(error.message, JSON.stringify(body).slice(0, 80)).toMatch(pattern);
    }
  });

  it('keeps column names case-sensitive', async () => {
    const table = await createTable(ctx, {
      name: 'Case',
      columns: [
        { name: 'Name', type: 'text' },
        { name: 'name', type: 'text' },
      ],
    });
    const [row] = await insertRows(ctx, table.id, [{ Name: 'upper', name: 'lower' }]);
    expect(row).toMatchObject({ Name: 'upper', name: 'lower' });
  });

  it('needs an API key', async () => {
    const response = await ctx.call('GET', '/v1/tables', { key: null });
    expect(expectError(response, 401)).toEqual({ message: 'Invalid API key', code: 'unauthorized' });
  });
});
