import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BODY_LIMIT_BYTES } from '../../src/app.js';
import { ADMIN_KEY, createTestContext, type TestContext } from '../helpers/app.js';

describe('error model', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  const auth = { authorization: `Bearer ${ADMIN_KEY}` };

  it('answers an unknown route with 404 not_found', async () => {
    const response = await ctx.call('GET', '/v1/nothing-here');
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: { message: 'Route GET /v1/nothing-here not found', code: 'not_found' } });
    const outside = await ctx.call('GET', '/nothing', { key: null });
    expect(outside.statusCode).toBe(404);
    expect(outside.json().error.code).toBe('not_found');
  });

  it('asks for a key before saying a /v1 route is unknown', async () => {
    const response = await ctx.call('GET', '/v1/nothing-here', { key: null });
    expect(response.statusCode).toBe(401);
  });

  it('refuses malformed JSON with 400 bad_request', async () => {
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/v1/deployments',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: { message: 'Body is not valid JSON', code: 'bad_request' } });
  });

  it('refuses a body without Content-Type: application/json', async () => {
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/v1/deployments',
      headers: { ...auth, 'content-type': 'text/plain' },
      payload: '{"name":"x"}',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error: { message: 'Content-Type must be application/json', code: 'bad_request' },
    });

    const missing = await ctx.app.inject({
      method: 'POST',
      url: '/v1/deployments',
      headers: auth,
      payload: Buffer.from('{"name":"x"}'),
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.code).toBe('bad_request');
  });

  it('accepts JSON with a charset', async () => {
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/v1/deployments',
      headers: { ...auth, 'content-type': 'application/json; charset=utf-8' },
      payload: '{"name":"charset"}',
    });
    expect(response.statusCode).toBe(201);
  });

  it('refuses a body over the size limit with 413 payload_too_large', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(BODY_LIMIT_BYTES + 10) });
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/v1/deployments',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: big,
    });
    expect(response.statusCode).toBe(413);
    expect(response.json().error.code).toBe('payload_too_large');
  });

  it('refuses deeply nested JSON', async () => {
    const deep = `${'['.repeat(200)}${']'.repeat(200)}`;
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/v1/deployments',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: `{"name": ${deep}}`,
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toMatch(/nested deeper/);
  });

  it('refuses the NUL character anywhere in a body, key or value, before any route sees it', async () => {
    for (const payload of ['{"name": "a\\u0000b"}', '{"name": "x", "k\\u0000": 1}', '{"name": ["\\u0000"]}']) {
      const response = await ctx.app.inject({
        method: 'POST',
        url: '/v1/deployments',
        headers: { ...auth, 'content-type': 'application/json' },
        payload,
      });
      expect(response.statusCode, payload).toBe(400);
      expect(response.json().error).toEqual({
        message: 'Body contains the NUL character (\\u0000), which cannot be stored',
        code: 'bad_request',
      });
    }
  });

  it('names the field in validation errors', async () => {
    const missing = await ctx.call('POST', '/v1/deployments', { body: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toEqual({ error: { message: 'name is required', code: 'bad_request' } });

    const wrongType = await ctx.call('POST', '/v1/deployments', { body: { name: 5 } });
    expect(wrongType.json().error.message).toBe('name must be a string');

    const unknown = await ctx.call('POST', '/v1/deployments', { body: { name: 'a', colour: 'red' } });
    expect(unknown.json().error.message).toBe('unknown field "colour"');

    const notObject = await ctx.call('POST', '/v1/deployments', { body: [1, 2] });
    expect(notObject.statusCode).toBe(400);
    expect(notObject.json().error.message).toBe('body must be an object');

    const badQuery = await ctx.call('GET', '/v1/deployments?limit=-1');
    expect(badQuery.statusCode).toBe(400);
    expect(badQuery.json().error.message).toBe('limit: must not be negative');
  });

  it('treats an empty JSON body as a missing body', async () => {
    const response = await ctx.app.inject({
      method: 'POST',
      url: '/v1/deployments',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('bad_request');
  });

  it('returns a request id on every reply', async () => {
    const response = await ctx.call('GET', '/healthz', { key: null, headers: { 'x-request-id': 'abc-123' } });
    expect(response.headers['x-request-id']).toBe('abc-123');
    const generated = await ctx.call('GET', '/healthz', { key: null });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
