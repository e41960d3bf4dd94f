import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createTestContext, type TestContext } from '../helpers/app.js';

describe('organizations', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('creates an organization with its first admin key, usable at once', async () => {
    const response = await ctx.call('POST', '/v1/organizations', { body: { name: 'Acme' } });
    expect(response.statusCode).toBe(201);
    const org = response.json();
    expect(org.id).toMatch(/^org_/);
    expect(org.name).toBe('Acme');
    expect(org.api_key).toMatchObject({ name: 'admin', role: 'admin' });
    expect(org.api_key.id).toMatch(/^key_/);
    expect(org.api_key.key).toMatch(/^crewd_/);

    const keys = await ctx.call('GET', '/v1/api-keys', { key: org.api_key.key });
    expect(keys.statusCode).toBe(200);
    expect(keys.json().api_keys.map((key: { id: string }) => key.id)).toEqual([org.api_key.id]);

    const list = await ctx.call('GET', '/v1/organizations');
    expect(list.json().organizations.map((o: { name: string }) => o.name)).toEqual(
      expect.arrayContaining(['default', 'Acme']),
    );
    expect(list.body).not.toContain(org.api_key.key);
  });

  it('is only for admin keys of organization default', async () => {
    const other = (await ctx.call('POST', '/v1/organizations', { body: { name: 'Other' } })).json();
    const fromOther = await ctx.call('POST', '/v1/organizations', { key: other.api_key.key, body: { name: 'Nested' } });
    expect(fromOther.statusCode).toBe(403);
    expect(fromOther.json().error.code).toBe('forbidden');
    expect((await ctx.call('GET', '/v1/organizations', { key: other.api_key.key })).statusCode).toBe(403);

    const member = await createKey(ctx, 'member', 'member');
    expect((await ctx.call('GET', '/v1/organizations', { key: member })).statusCode).toBe(403);
  });

  it('keeps API keys apart between organizations', async () => {
    const other = (await ctx.call('POST', '/v1/organizations', { body: { name: 'Apart' } })).json();
    const defaultKeys = (await ctx.call('GET', '/v1/api-keys')).json().api_keys;
    const adminId = defaultKeys.find((key: { name: string }) => key.name === 'admin').id;
    const cross = await ctx.call('DELETE', `/v1/api-keys/${adminId}`, { key: other.api_key.key });
    expect(cross.statusCode).toBe(404);
    expect((await ctx.call('GET', '/v1/api-keys')).statusCode).toBe(200);
  });

  it('validates the name', async () => {
    const response = await ctx.call('POST', '/v1/organizations', { body: { name: '   ' } });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toMatch(/^name/);
  });
});
