import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createTestContext, type TestContext } from '../helpers/app.js';

describe('per-key rate limit', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ RATE_LIMIT_PER_MINUTE: '5' });
  });
  afterAll(() => ctx.close());

  it('answers 429 with Retry-After once a key has used its minute, and counts keys apart', async () => {
    const key = await createKey(ctx, 'limited', 'admin');
    const other = await createKey(ctx, 'another', 'admin');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i += 1) statuses.push((await ctx.call('GET', '/v1/api-keys', { key })).statusCode);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await ctx.call('GET', '/v1/api-keys', { key });
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.json()).toEqual({
      error: { message: 'Rate limit of 5 requests per minute exceeded', code: 'rate_limited' },
    });
    expect((await ctx.call('GET', '/v1/api-keys', { key: other })).statusCode).toBe(200);
  });

  it('is off by default', async () => {
    const plain = await createTestContext();
    try {
      for (let i = 0; i < 30; i += 1) expect((await plain.call('GET', '/v1/api-keys')).statusCode).toBe(200);
    } finally {
      await plain.close();
    }
  });
});

describe('per-address limit on failed keys', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ FAILED_AUTH_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(() => ctx.close());

  const call = (key: string | null, remoteAddress: string) =>
    ctx.app.inject({
      method: 'GET',
      url: '/v1/api-keys',
      remoteAddress,
      headers: key === null ? {} : { authorization: `Bearer ${key}` },
    });

  it('answers 429 once an address has sent its minute of invalid or missing keys', async () => {
    const statuses: number[] = [];
    for (const key of ['crewd_guess_1', null, 'crewd_guess_3', 'crewd_guess_4'])
      statuses.push((await call(key, '203.0.113.5')).statusCode);
    expect(statuses).toEqual([401, 401, 401, 429]);
    const limited = await call('crewd_guess_5', '203.0.113.5');
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.json()).toEqual({
      error: {
        message: 'Too many requests with an invalid API key from this address (limit 3 per minute); try again later',
        code: 'rate_limited',
      },
    });
  });

  it('never refuses a valid key from an address over the limit (crews share loopback)', async () => {
    for (let i = 0; i < 5; i += 1) await call('crewd_guess', '127.0.0.1');
    expect((await call('crewd_guess', '127.0.0.1')).statusCode).toBe(429);
    expect((await call(ctx.adminKey, '127.0.0.1')).statusCode).toBe(200);
    expect((await call(null, '127.0.0.1')).statusCode).toBe(429);
  });

  it('counts addresses apart and never counts valid keys', async () => {
    for (let i = 0; i < 10; i += 1) expect((await call(ctx.adminKey, '203.0.113.6')).statusCode).toBe(200);
    expect((await call('crewd_guess', '203.0.113.6')).statusCode).toBe(401);
    expect((await call('crewd_guess', '203.0.113.7')).statusCode).toBe(401);
  });

  it('is 60 a minute by default', async () => {
    const plain = await createTestContext();
    try {
      expect(plain.config.failedAuthLimitPerMinute).toBe(60);
      const statuses = new Set<number>();
      for (let i = 0; i < 61; i += 1)
        statuses.add((await plain.call('GET', '/v1/api-keys', { key: 'wrong' })).statusCode);
      expect([...statuses]).toEqual([401, 429]);
    } finally {
      await plain.close();
    }
  });
});

describe('per-address limit on incoming-webhook token URLs', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ INCOMING_WEBHOOK_LIMIT_PER_MINUTE: '2' });
  });
  afterAll(() => ctx.close());

  const trigger = (token: string, remoteAddress: string) =>
    ctx.app.inject({ method: 'POST', url: `/webhooks/runs/${token}`, remoteAddress, payload: { a: 1 } });

  it('answers 429 once an address has used its minute, whatever the token, and counts addresses apart', async () => {
    const statuses: number[] = [];
    for (const token of ['guess-1', 'guess-2', 'guess-3'])
      statuses.push((await trigger(token, '198.51.100.1')).statusCode);
    expect(statuses).toEqual([404, 404, 429]);
    const limited = await trigger('guess-4', '198.51.100.1');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.json()).toEqual({
      error: {
        message: 'Rate limit of 2 requests per minute per address to incoming webhook URLs exceeded',
        code: 'rate_limited',
      },
    });
    expect((await trigger('guess-5', '198.51.100.2')).statusCode).toBe(404);
  });

  it('leaves keyed routes alone', async () => {
    for (let i = 0; i < 5; i += 1) expect((await ctx.call('GET', '/v1/api-keys')).statusCode).toBe(200);
  });
});
