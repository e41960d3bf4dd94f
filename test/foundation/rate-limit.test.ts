import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/auth/rate-limit.js';
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

describe('token bucket', () => {
  it('refills over time', () => {
    let time = 0;
    const limiter = createRateLimiter(60, () => time);
    for (let i = 0; i < 60; i += 1) expect(limiter.take('k')).toBe(0);
    expect(limiter.take('k')).toBe(1);
    time += 1000;
    expect(limiter.take('k')).toBe(0);
    expect(limiter.take('other')).toBe(0);
  });
});
