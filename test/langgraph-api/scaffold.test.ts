import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startTestApp, type TestContext } from '../helpers/app.js';

describe('LangGraph API scaffolding', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await startTestApp();
  });
  afterAll(async () => ctx?.close());

  it('answers /ok and /info without a key', async () => {
    expect((await ctx.call('GET', '/langgraph/ok', { key: null })).json()).toEqual({ ok: true });
    const info = await ctx.call('GET', '/langgraph/info', { key: null });
    expect(info.statusCode).toBe(200);
    expect(info.json().flags).toMatchObject({ assistants: true, crons: true });
  });

  it('takes the key as x-api-key or bearer, and answers {"detail"} without one', async () => {
    const none = await ctx.call('POST', '/langgraph/threads/search', { key: null, body: {} });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({ detail: 'Invalid API key' });
    const wrong = await ctx.call('POST', '/langgraph/threads/search', {
      key: null,
      headers: { 'x-api-key': 'not-a-key-of-anyone' },
      body: {},
    });
    expect(wrong.statusCode).toBe(401);
    const unknownRoute = await ctx.call('GET', '/langgraph/nowhere', {
      key: null,
      headers: { 'x-api-key': ADMIN_KEY },
    });
    expect(unknownRoute.statusCode).toBe(404);
    expect(unknownRoute.json().detail).toContain('/langgraph/nowhere');
  });

  it('does not take x-api-key on /v1', async () => {
    const v1 = await ctx.call('GET', '/v1/deployments', { key: null, headers: { 'x-api-key': ADMIN_KEY } });
    expect(v1.statusCode).toBe(401);
  });

  it('is not served when LANGGRAPH_API_PREFIX is empty', async () => {
    const off = await startTestApp({ env: { LANGGRAPH_API_PREFIX: '' } });
    try {
      const ok = await off.call('GET', '/langgraph/ok', { key: null });
      expect(ok.statusCode).toBe(404);
      expect(ok.json()).toHaveProperty('error');
    } finally {
      await off.close();
    }
  });
});
