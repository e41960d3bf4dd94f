import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/app.js';

describe('health and docs', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('answers /healthz and /readyz without a key', async () => {
    const health = await ctx.call('GET', '/healthz', { key: null });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });
    const ready = await ctx.call('GET', '/readyz', { key: null });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready' });
  });

  it('serves an OpenAPI 3.1 document generated from the route schemas', async () => {
    const response = await ctx.call('GET', '/openapi.json', { key: null });
    expect(response.statusCode).toBe(200);
    const doc = response.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/v1/deployments', '/v1/deployments/{id}/versions', '/v1/api-keys', '/v1/organizations']),
    );
    const create = doc.paths['/v1/deployments'].post;
    expect(create.requestBody.content['application/json'].schema).toBeDefined();
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '400', '401']));
  });

  it('serves a docs page', async () => {
    const response = await ctx.call('GET', '/docs', { key: null });
    expect([200, 302]).toContain(response.statusCode);
    const page = await ctx.call('GET', '/docs/', { key: null });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
  });
});
