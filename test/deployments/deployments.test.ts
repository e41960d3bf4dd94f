import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createTestContext, type TestContext } from '../helpers/app.js';

describe('deployments, versions and environments', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  const createDeployment = async (name: string, key?: string) => {
    const response = await ctx.call('POST', '/v1/deployments', { key, body: { name } });
    expect(response.statusCode).toBe(201);
    return response.json();
  };

  it('creates a deployment with no running versions', async () => {
    const deployment = await createDeployment('research crew');
    expect(deployment.id).toMatch(/^dep_/);
    expect(deployment).toMatchObject({ name: 'research crew', environments: { production: null, staging: null } });
    expect(deployment.created_at).toBe(deployment.updated_at);
    const fetched = await ctx.call('GET', `/v1/deployments/${deployment.id}`);
    expect(fetched.json()).toEqual(deployment);
  });

  it('numbers versions per deployment and keeps env values secret', async () => {
    const deployment = await createDeployment('numbered');
    const first = await ctx.call('POST', `/v1/deployments/${deployment.id}/versions`, {
      body: { command: ['node', 'crew.mjs'], env: { OPENAI_API_KEY: 'sk-secret-value', MODE: 'x' } },
    });
    expect(first.statusCode).toBe(201);
    expect(first.json()).toMatchObject({
      deployment_id: deployment.id,
      number: 1,
      command: ['node', 'crew.mjs'],
      cwd: null,
      env_keys: ['MODE', 'OPENAI_API_KEY'],
      timeout_seconds: null,
    });
    expect(first.json().id).toMatch(/^ver_/);
    expect(first.body).not.toContain('sk-secret-value');

    const second = await ctx.call('POST', `/v1/deployments/${deployment.id}/versions`, {
      body: { command: ['python3', 'crew.py'], cwd: '/srv/crew', timeout_seconds: 60, environment: 'staging' },
    });
    expect(second.json()).toMatchObject({ number: 2, cwd: '/srv/crew', timeout_seconds: 60 });

    const other = await createDeployment('other');
    const otherFirst = await ctx.call('POST', `/v1/deployments/${other.id}/versions`, { body: { command: ['true'] } });
    expect(otherFirst.json().number).toBe(1);

    const fetched = (await ctx.call('GET', `/v1/deployments/${deployment.id}`)).json();
    expect(fetched.environments).toEqual({
      production: null,
      staging: { version_id: second.json().id, version_number: 2 },
    });

    const versions = await ctx.call('GET', `/v1/deployments/${deployment.id}/versions`);
    expect(versions.json().versions.map((v: { number: number }) => v.number)).toEqual([2, 1]);
    expect(versions.body).not.toContain('sk-secret-value');
  });

  it('gives concurrent versions distinct numbers', async () => {
    const deployment = await createDeployment('concurrent');
    const responses = await Promise.all(
      Array.from({ length: 8 }, () =>
        ctx.call('POST', `/v1/deployments/${deployment.id}/versions`, { body: { command: ['true'] } }),
      ),
    );
    const numbers = responses.map((response) => response.json().number).sort((a, b) => a - b);
    expect(numbers).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('promotes, rolls back and clears an environment', async () => {
    const deployment = await createDeployment('promote');
    const v1 = (
      await ctx.call('POST', `/v1/deployments/${deployment.id}/versions`, {
        body: { command: ['true'], environment: 'production' },
      })
    ).json();
    const v2 = (
      await ctx.call('POST', `/v1/deployments/${deployment.id}/versions`, { body: { command: ['true'] } })
    ).json();

    const promoted = await ctx.call('PUT', `/v1/deployments/${deployment.id}/environments/production`, {
      body: { version_id: v2.id },
    });
    expect(promoted.statusCode).toBe(200);
    expect(promoted.json().environments.production).toEqual({ version_id: v2.id, version_number: 2 });

    const rolledBack = await ctx.call('PUT', `/v1/deployments/${deployment.id}/environments/production`, {
      body: { version_id: v1.id },
    });
    expect(rolledBack.json().environments.production).toEqual({ version_id: v1.id, version_number: 1 });

    const cleared = await ctx.call('DELETE', `/v1/deployments/${deployment.id}/environments/production`);
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json().environments.production).toBeNull();
  });

  it('refuses a version of another deployment and an unknown environment', async () => {
    const a = await createDeployment('a');
    const b = await createDeployment('b');
    const vb = (await ctx.call('POST', `/v1/deployments/${b.id}/versions`, { body: { command: ['true'] } })).json();
    const wrong = await ctx.call('PUT', `/v1/deployments/${a.id}/environments/production`, {
      body: { version_id: vb.id },
    });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().error.message).toContain('version_id');
    const env = await ctx.call('PUT', `/v1/deployments/${a.id}/environments/qa`, { body: { version_id: vb.id } });
    expect(env.statusCode).toBe(400);
    expect(env.json().error.message).toMatch(/^environment/);
  });

  it('validates versions', async () => {
    const deployment = await createDeployment('validate');
    const url = `/v1/deployments/${deployment.id}/versions`;
    const cases: Array<[unknown, RegExp]> = [
      [{}, /^command is required$/],
      [{ command: [] }, /^command/],
      [{ command: 'node crew.js' }, /^command/],
      [{ command: ['node'], cwd: 'relative/dir' }, /^cwd: must be an absolute path$/],
      [{ command: ['node'], env: { 'BAD-NAME': 'x' } }, /^env/],
      [{ command: ['node'], env: { A: 1 } }, /^env\.A/],
      [{ command: ['node'], timeout_seconds: 0 }, /^timeout_seconds/],
      [{ command: ['node'], environment: 'qa' }, /^environment/],
    ];
    for (const [body, message] of cases) {
      const response = await ctx.call('POST', url, { body });
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json().error.code).toBe('bad_request');
      expect(response.json().error.message).toMatch(message);
    }
  });

  it('answers 404 for unknown deployments and for other organizations', async () => {
    const mine = await createDeployment('mine');
    const other = (await ctx.call('POST', '/v1/organizations', { body: { name: 'Elsewhere' } })).json();
    const otherKey = other.api_key.key as string;
    for (const [method, url, body] of [
      ['GET', `/v1/deployments/${mine.id}`, undefined],
      ['POST', `/v1/deployments/${mine.id}/versions`, { command: ['true'] }],
      ['GET', `/v1/deployments/${mine.id}/versions`, undefined],
      ['DELETE', `/v1/deployments/${mine.id}/environments/staging`, undefined],
    ] as const) {
      const response = await ctx.call(method, url, { key: otherKey, body });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ error: { message: 'Deployment not found', code: 'not_found' } });
    }
    expect((await ctx.call('GET', '/v1/deployments/dep_nope')).statusCode).toBe(404);
    const listed = (await ctx.call('GET', '/v1/deployments', { key: otherKey })).json();
    expect(listed.deployments).toEqual([]);
  });

  it('lists deployments newest first with pagination', async () => {
    const other = (await ctx.call('POST', '/v1/organizations', { body: { name: 'Paged' } })).json();
    const key = other.api_key.key as string;
    for (const name of ['one', 'two', 'three']) await createDeployment(name, key);
    const all = (await ctx.call('GET', '/v1/deployments', { key })).json().deployments;
    expect(all.map((d: { name: string }) => d.name)).toEqual(['three', 'two', 'one']);
    const page = (await ctx.call('GET', '/v1/deployments?limit=1&offset=1', { key })).json().deployments;
    expect(page.map((d: { name: string }) => d.name)).toEqual(['two']);
  });

  it('is admin-only', async () => {
    const member = await createKey(ctx, 'member', 'member');
    const response = await ctx.call('GET', '/v1/deployments', { key: member });
    expect(response.statusCode).toBe(403);
    expect(response.json().error.message).toBe('Managing deployments requires an admin API key');
  });
});
