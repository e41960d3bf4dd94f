import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapDefaultOrganization } from '../../src/access/bootstrap.js';
import { hashSecret } from '../../src/auth/keys.js';
import { ADMIN_KEY, createKey, createTestContext, type TestContext } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/database.js';

describe('authentication and API keys', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it.each([
    ['no header', undefined],
    ['an unknown key', 'Bearer crewd_unknown'],
    ['another scheme', `Basic ${ADMIN_KEY}`],
    ['an empty bearer', 'Bearer '],
  ])('answers %s with 401 Invalid API key', async (_case, header) => {
    const response = await ctx.app.inject({
      method: 'GET',
      url: '/v1/deployments',
      headers: header === undefined ? {} : { authorization: header },
    });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: { message: 'Invalid API key', code: 'unauthorized' } });
  });

  it('stores keys only as hashes', async () => {
    const rows = await ctx.database.handle.db.selectFrom('api_keys').select(['name', 'key_hash']).execute();
    const admin = rows.find((row) => row.name === 'admin');
    expect(admin?.key_hash).toBe(hashSecret(ADMIN_KEY));
    expect(JSON.stringify(rows)).not.toContain(ADMIN_KEY);
  });

  it('creates member keys by default and shows the secret once', async () => {
    const created = await ctx.call('POST', '/v1/api-keys', { body: { name: 'ci bot' } });
    expect(created.statusCode).toBe(201);
    const body = created.json();
    expect(body).toMatchObject({ name: 'ci bot', role: 'member' });
    expect(body.id).toMatch(/^key_/);
    expect(body.key).toMatch(/^crewd_/);
    expect(new Date(body.created_at).toISOString()).toBe(body.created_at);

    const list = await ctx.call('GET', '/v1/api-keys');
    expect(list.statusCode).toBe(200);
    const listed = list.json().api_keys.find((key: { id: string }) => key.id === body.id);
    expect(listed).toEqual({ id: body.id, name: 'ci bot', role: 'member', created_at: body.created_at });
    expect(list.body).not.toContain(body.key);
  });

  it('lets a member key authenticate but not manage', async () => {
    const member = await createKey(ctx, 'member-one', 'member');
    const keys = await ctx.call('GET', '/v1/api-keys', { key: member });
    expect(keys.statusCode).toBe(403);
    expect(keys.json()).toEqual({
      error: { message: 'Managing API keys requires an admin API key', code: 'forbidden' },
    });
    const deployments = await ctx.call('POST', '/v1/deployments', { key: member, body: { name: 'x' } });
    expect(deployments.statusCode).toBe(403);
    expect(deployments.json().error.code).toBe('forbidden');
  });

  it('refuses a revoked key from the next request on', async () => {
    const admin2 = await createKey(ctx, 'second admin', 'admin');
    expect((await ctx.call('GET', '/v1/api-keys', { key: admin2 })).statusCode).toBe(200);
    const list = (await ctx.call('GET', '/v1/api-keys')).json().api_keys;
    const id = list.find((key: { name: string }) => key.name === 'second admin').id;
    const deleted = await ctx.call('DELETE', `/v1/api-keys/${id}`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ success: true });
    expect((await ctx.call('GET', '/v1/api-keys', { key: admin2 })).statusCode).toBe(401);
    const again = await ctx.call('DELETE', `/v1/api-keys/${id}`);
    expect(again.statusCode).toBe(404);
    expect(again.json().error.code).toBe('not_found');
  });

  it('validates key creation', async () => {
    const badRole = await ctx.call('POST', '/v1/api-keys', { body: { name: 'x', role: 'owner' } });
    expect(badRole.statusCode).toBe(400);
    expect(badRole.json().error.message).toMatch(/^role/);
    const noName = await ctx.call('POST', '/v1/api-keys', { body: { role: 'admin' } });
    expect(noName.json().error.message).toBe('name is required');
  });
});

describe('bootstrap', () => {
  it('creates organization default with the given admin key once, and generates one when none is given', async () => {
    const database = await createTestDatabase();
    try {
      const generated = await bootstrapDefaultOrganization(database.handle.db, undefined);
      expect(generated.generatedKey).toMatch(/^crewd_/);
      const second = await bootstrapDefaultOrganization(database.handle.db, 'some-other-bootstrap-key');
      expect(second.generatedKey).toBeNull();
      const keys = await database.handle.db.selectFrom('api_keys').selectAll().execute();
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatchObject({ org_id: 'org_default', name: 'admin', role: 'admin' });
      expect(keys[0]?.key_hash).toBe(hashSecret(generated.generatedKey as string));
    } finally {
      await database.destroy();
    }
  });

  it('uses BOOTSTRAP_API_KEY as the admin secret', async () => {
    const database = await createTestDatabase();
    try {
      const result = await bootstrapDefaultOrganization(database.handle.db, 'bootstrap-key-0123456789');
      expect(result.generatedKey).toBeNull();
      const key = await database.handle.db.selectFrom('api_keys').select('key_hash').executeTakeFirstOrThrow();
      expect(key.key_hash).toBe(hashSecret('bootstrap-key-0123456789'));
    } finally {
      await database.destroy();
    }
  });
});
