import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeployment, createWebhook, createWebhookTestContext, type WebhookTestContext } from './helpers.js';

describe('webhook management', () => {
  let ctx: WebhookTestContext;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createWebhookTestContext({ LOG_LEVEL: 'debug', PUBLIC_URL: 'https://crewd.example.com/' });
    deploymentId = await createDeployment(ctx);
  });
  afterAll(() => ctx.close());

  it('creates an outgoing webhook and shows its secret only once', async () => {
    const response = await ctx.call('POST', '/v1/webhooks', {
      body: {
        deployment_id: deploymentId,
        name: 'Slack relay',
        url: 'https://hooks.example.com/crewd',
        events: ['run.failed', 'run.succeeded', 'run.failed'],
      },
    });
    expect(response.statusCode).toBe(201);
    const created = response.json();
    expect(created).toEqual({
      id: expect.stringMatching(/^wh_/),
      deployment_id: deploymentId,
      name: 'Slack relay',
      url: 'https://hooks.example.com/crewd',
      events: ['run.succeeded', 'run.failed'],
      environment: 'production',
      enabled: true,
      secret: expect.stringMatching(/^whsec_[0-9a-z]{40}$/),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });

    const got = await ctx.call('GET', `/v1/webhooks/${created.id}`);
    expect(got.statusCode).toBe(200);
    const { secret: _secret, ...withoutSecret } = created;
    expect(got.json()).toEqual(withoutSecret);
    const listed = await ctx.call('GET', `/v1/webhooks?deployment_id=${deploymentId}`);
    expect(listed.json().webhooks).toContainEqual(withoutSecret);
    expect(listed.body).not.toContain(created.secret);

    const patched = await ctx.call('PATCH', `/v1/webhooks/${created.id}`, {
      body: { name: 'Renamed', enabled: false, environment: 'staging', events: ['run.failed'] },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({
      name: 'Renamed',
      enabled: false,
      environment: 'staging',
      events: ['run.failed'],
    });
    expect(patched.json().secret).toBeUndefined();

    const regenerated = await ctx.call('POST', `/v1/webhooks/${created.id}/secret`);
    expect(regenerated.statusCode).toBe(200);
    expect(Object.keys(regenerated.json())).toEqual(['secret']);
    expect(regenerated.json().secret).not.toBe(created.secret);
    expect((await ctx.call('GET', `/v1/webhooks/${created.id}`)).body).not.toContain(regenerated.json().secret);

    expect(ctx.logs()).not.toContain(created.secret);
    expect(ctx.logs()).not.toContain(regenerated.json().secret);

    const deleted = await ctx.call('DELETE', `/v1/webhooks/${created.id}`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ success: true });
    const gone = await ctx.call('GET', `/v1/webhooks/${created.id}`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toEqual({ error: { message: 'Webhook not found', code: 'not_found' } });
  });

  it('validates the body', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ name: 'x', url: 'https://a.example.com', events: ['run.succeeded'] }, /^deployment_id is required$/],
      [{ deployment_id: deploymentId, url: 'https://a.example.com', events: ['run.succeeded'] }, /^name is required$/],
      [{ deployment_id: deploymentId, name: 'x', url: 'ftp://a.example.com', events: ['run.succeeded'] }, /^url: /],
      [{ deployment_id: deploymentId, name: 'x', url: 'not a url', events: ['run.succeeded'] }, /^url: /],
      [
        { deployment_id: deploymentId, name: 'x', url: 'https://u:p@a.example.com', events: ['run.succeeded'] },
        /^url: /,
      ],
      [{ deployment_id: deploymentId, name: 'x', url: 'https://a.example.com', events: [] }, /^events: /],
      [{ deployment_id: deploymentId, name: 'x', url: 'https://a.example.com', events: ['run.started'] }, /^events\.0/],
      [
        {
          deployment_id: deploymentId,
          name: 'x',
          url: 'https://a.example.com',
          events: ['run.failed'],
          environment: 'dev',
        },
        /^environment/,
      ],
      [
        { deployment_id: deploymentId, name: 'x', url: 'https://a.example.com', events: ['run.failed'], secret: 's' },
        /unknown field "secret"/,
      ],
    ];
    for (const [body, message] of cases) {
      const response = await ctx.call('POST', '/v1/webhooks', { body });
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json().error.code).toBe('bad_request');
      expect(response.json().error.message).toMatch(message);
    }
    const unknownDeployment = await ctx.call('POST', '/v1/webhooks', {
      body: { deployment_id: 'dep_nope', name: 'x', url: 'https://a.example.com', events: ['run.failed'] },
    });
    expect(unknownDeployment.statusCode).toBe(404);
    expect(unknownDeployment.json()).toEqual({ error: { message: 'Deployment not found', code: 'not_found' } });
    const listUnknown = await ctx.call('GET', '/v1/webhooks?deployment_id=dep_nope');
    expect(listUnknown.statusCode).toBe(404);
  });

  it('answers 404 for unknown webhooks and deliveries on every route', async () => {
    for (const [method, url] of [
      ['GET', '/v1/webhooks/wh_nope'],
      ['PATCH', '/v1/webhooks/wh_nope'],
      ['DELETE', '/v1/webhooks/wh_nope'],
      ['POST', '/v1/webhooks/wh_nope/secret'],
      ['GET', '/v1/webhooks/wh_nope/deliveries'],
      ['POST', '/v1/webhooks/wh_nope/deliveries/dlv_nope/redeliver'],
    ] as const) {
      const response = await ctx.call(method, url, method === 'PATCH' ? { body: { name: 'x' } } : {});
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(response.json().error).toEqual({ message: 'Webhook not found', code: 'not_found' });
    }
  });

  it('keeps webhooks to their organization and to admin keys', async () => {
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: 'https://a.example.com' });
    const org = await ctx.call('POST', '/v1/organizations', { body: { name: 'other' } });
    const otherKey = org.json().api_key.key as string;
    for (const [method, url] of [
      ['GET', `/v1/webhooks/${hook.id}`],
      ['DELETE', `/v1/webhooks/${hook.id}`],
      ['POST', `/v1/webhooks/${hook.id}/secret`],
      ['GET', `/v1/webhooks/${hook.id}/deliveries`],
    ] as const) {
      const response = await ctx.call(method, url, { key: otherKey });
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(response.json().error.message).toBe('Webhook not found');
    }
    expect((await ctx.call('GET', '/v1/webhooks', { key: otherKey })).json()).toEqual({ webhooks: [] });
    const foreignDeployment = await ctx.call('POST', '/v1/webhooks', {
      key: otherKey,
      body: { deployment_id: deploymentId, name: 'x', url: 'https://a.example.com', events: ['run.failed'] },
    });
    expect(foreignDeployment.statusCode).toBe(404);
    expect(foreignDeployment.json().error.message).toBe('Deployment not found');

    const member = await ctx.call('POST', '/v1/api-keys', { body: { name: 'member', role: 'member' } });
    const memberKey = member.json().key as string;
    const forbidden = await ctx.call('GET', '/v1/webhooks', { key: memberKey });
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().error.code).toBe('forbidden');
    expect((await ctx.call('GET', '/v1/incoming-webhooks', { key: memberKey })).statusCode).toBe(403);
    expect((await ctx.call('GET', '/v1/webhooks', { key: null })).statusCode).toBe(401);
  });
});

describe('incoming webhook management', () => {
  let ctx: WebhookTestContext;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createWebhookTestContext({ LOG_LEVEL: 'debug', PUBLIC_URL: 'https://crewd.example.com/' });
    deploymentId = await createDeployment(ctx);
  });
  afterAll(() => ctx.close());

  it('creates a token URL shown once, lists without it, and deletes it', async () => {
    const response = await ctx.call('POST', '/v1/incoming-webhooks', {
      body: { deployment_id: deploymentId, environment: 'staging', name: 'from CI' },
    });
    expect(response.statusCode).toBe(201);
    const created = response.json();
    expect(created).toEqual({
      id: expect.stringMatching(/^iwh_/),
      deployment_id: deploymentId,
      environment: 'staging',
      name: 'from CI',
      token: expect.stringMatching(/^[0-9a-z]{48}$/),
      url: `https://crewd.example.com/webhooks/runs/${created.token}`,
      created_at: expect.any(String),
    });
    const defaults = await ctx.call('POST', '/v1/incoming-webhooks', { body: { deployment_id: deploymentId } });
    expect(defaults.json()).toMatchObject({ environment: 'production', name: null });

    const listed = await ctx.call('GET', `/v1/incoming-webhooks?deployment_id=${deploymentId}`);
    expect(listed.statusCode).toBe(200);
    expect(listed.json().incoming_webhooks).toHaveLength(2);
    expect(listed.body).not.toContain(created.token);
    expect(listed.json().incoming_webhooks).toContainEqual({
      id: created.id,
      deployment_id: deploymentId,
      environment: 'staging',
      name: 'from CI',
      created_at: created.created_at,
    });
    expect((await ctx.call('GET', `/v1/incoming-webhooks/${created.id}`)).json().id).toBe(created.id);

    // The token is stored only as a hash.
    const stored = await ctx.database.handle.db.selectFrom('incoming_webhooks').selectAll().execute();
    expect(JSON.stringify(stored)).not.toContain(created.token);

    // Bad bodies are refused before a run is made; a deleted token is unknown.
    const notObject = await ctx.call('POST', `/webhooks/runs/${created.token}`, { key: null, body: [1, 2] });
    expect(notObject.statusCode).toBe(400);
    expect(notObject.json().error.code).toBe('bad_request');
    const text = await ctx.call('POST', `/webhooks/runs/${created.token}`, {
      key: null,
      headers: { 'content-type': 'text/plain' },
      body: 'hello',
    });
    expect(text.statusCode).toBe(400);

    const deleted = await ctx.call('DELETE', `/v1/incoming-webhooks/${created.id}`);
    expect(deleted.json()).toEqual({ success: true });
    const afterDelete = await ctx.call('POST', `/webhooks/runs/${created.token}`, { key: null, body: { a: 1 } });
    expect(afterDelete.statusCode).toBe(404);
    expect(afterDelete.json().error.code).toBe('not_found');
    expect((await ctx.call('DELETE', `/v1/incoming-webhooks/${created.id}`)).statusCode).toBe(404);

    expect(ctx.logs()).toContain('/webhooks/runs/[redacted]');
    expect(ctx.logs()).not.toContain(created.token);
  });

  it('answers 404 for an unknown token without a key, and refuses an unknown deployment', async () => {
    const unknown = await ctx.call('POST', '/webhooks/runs/not-a-token', { key: null, body: { a: 1 } });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: { message: 'Webhook not found', code: 'not_found' } });
    const missing = await ctx.call('POST', '/v1/incoming-webhooks', { body: { deployment_id: 'dep_nope' } });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.message).toBe('Deployment not found');
    const noDeployment = await ctx.call('POST', '/v1/incoming-webhooks', { body: {} });
    expect(noDeployment.json().error.message).toBe('deployment_id is required');
  });

  it('documents every webhook route in the OpenAPI document', async () => {
    const response = await ctx.call('GET', '/openapi.json', { key: null });
    expect(response.statusCode, response.body).toBe(200);
    const doc = response.json();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/webhooks',
        '/v1/webhooks/{id}',
        '/v1/webhooks/{id}/secret',
        '/v1/webhooks/{id}/deliveries',
        '/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver',
        '/v1/incoming-webhooks',
        '/v1/incoming-webhooks/{id}',
        '/webhooks/runs/{token}',
      ]),
    );
    expect(doc.paths['/webhooks/runs/{token}'].post.security).toEqual([]);
  });
});
