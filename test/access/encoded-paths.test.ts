import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, createTestContext, type TestContext } from '../helpers/app.js';

/**
 * The router matches a path after undoing its percent-encoding (`/%761/runs` is `/v1/runs`), so whether a request
 * needs a key is decided on the route it reached, not on the characters it was sent as: else a caller without a key
 * reaches the route's validation (and whatever runs before the handler asks for the principal), and the limits on
 * failed keys never count it.
 */
describe('percent-encoded paths to routes that need a key', () => {
  let ctx: TestContext;
  let member: string;
  beforeAll(async () => {
    ctx = await createTestContext({ FAILED_AUTH_LIMIT_PER_MINUTE: '5' });
    member = await createKey(ctx, 'member', 'member');
  });
  afterAll(() => ctx.close());

  it('answer 401 before anything else, as their plain paths do', async () => {
    const runs = await ctx.call('POST', '/%761/runs', { key: null, body: {} });
    expect(runs.statusCode, runs.body).toBe(401);
    expect(runs.json().error.code).toBe('unauthorized');
    const threads = await ctx.call('POST', '/langgr%61ph/threads', { key: null, body: { thread_id: 'not a uuid' } });
    expect(threads.statusCode, threads.body).toBe(401);
    expect(threads.json()).toEqual({ detail: 'Invalid API key' });
    const mcp = await ctx.call('POST', '/%6Dcp', { key: null, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    expect(mcp.statusCode, mcp.body).toBe(401);
  });

  it('count a wrong key against the address, and take a right one as their plain paths do', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      statuses.push((await ctx.call('POST', '/%761/runs', { key: `crewd_wrong${i}`, body: {} })).statusCode);
    }
    // Five failures a minute from one address (the first test's included), then 429.
    expect(statuses[0]).toBe(401);
    expect(statuses.at(-1)).toBe(429);
    const searched = await ctx.app.inject({
      method: 'POST',
      url: '/langgr%61ph/threads/search',
      headers: { 'x-api-key': member },
      payload: {},
    });
    expect(searched.statusCode, searched.body).toBe(200);
  });
});
