import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, createTestContext, type TestContext } from '../helpers/app.js';

const TOKEN = 'metrics-scrape-token-0123';

describe('GET /metrics without METRICS_TOKEN', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it.each(['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1'])('answers a loopback client (%s)', async (address) => {
    const response = await ctx.app.inject({ method: 'GET', url: '/metrics', remoteAddress: address });
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('crewd_open_streams');
  });

  it.each(['10.0.0.7', '203.0.113.9', '::ffff:10.0.0.7', '2001:db8::1'])(
    'refuses any other client (%s) with 403, naming METRICS_TOKEN',
    async (address) => {
      const response = await ctx.app.inject({ method: 'GET', url: '/metrics', remoteAddress: address });
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({
        error: {
          message: 'GET /metrics answers loopback clients only; set METRICS_TOKEN to scrape it',
          code: 'forbidden',
        },
      });
    },
  );

  it('does not take X-Forwarded-For for the client address (TRUST_PROXY is off)', async () => {
    const response = await ctx.app.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '203.0.113.9',
      headers: { 'x-forwarded-for': '127.0.0.1' },
    });
    expect(response.statusCode).toBe(403);
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ METRICS_TOKEN: TOKEN });
  });
  afterAll(() => ctx.close());

  it('answers any address that sends the token as a bearer', async () => {
    const response = await ctx.app.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '203.0.113.9',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('crewd_open_streams');
  });

  it.each([undefined, 'Bearer wrong-token-000000000', `Bearer ${TOKEN}x`, TOKEN, `Bearer ${ADMIN_KEY}`])(
    'refuses a missing or wrong token (%s) with 401, even from loopback',
    async (authorization) => {
      const response = await ctx.app.inject({
        method: 'GET',
        url: '/metrics',
        headers: authorization === undefined ? {} : { authorization },
      });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({
        error: { message: 'GET /metrics requires the METRICS_TOKEN as a Bearer token', code: 'unauthorized' },
      });
    },
  );
});

describe('TRUST_PROXY=true', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ TRUST_PROXY: 'true' });
  });
  afterAll(() => ctx.close());

  it('takes the client address from X-Forwarded-For', async () => {
    const forwarded = await ctx.app.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '127.0.0.1',
      headers: { 'x-forwarded-for': '203.0.113.9' },
    });
    expect(forwarded.statusCode).toBe(403);
  });
});
