import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/app.js';
import { explainWithoutPython, testPython } from '../python/helpers.js';
import { createRunContext, type RunContext } from '../runs/helpers.js';
import { runSdkScript } from './helpers.js';

explainWithoutPython('LangGraph API store through langgraph-sdk');

describe.runIf(testPython() !== null)('LangGraph API store through langgraph-sdk', () => {
  let ctx: RunContext;

  beforeAll(async () => {
    ctx = await createRunContext();
  }, 60_000);
  afterAll(async () => ctx?.close());

  it('puts, gets, searches, lists and deletes items with the sync and async clients', { timeout: 60_000 }, async () => {
    const result = await runSdkScript('store.py', { url: `${ctx.baseUrl}/langgraph`, key: ADMIN_KEY });
    expect(result.items).toBe(3);
  });

  it("searches with LangGraph's filters: $gt, $gte, $lt, $lte, $eq, $ne, nested objects, whole lists", {
    timeout: 60_000,
  }, async () => {
    // store_filters.py passes against `langgraph dev` (OFFICIAL=1) too.
    const result = await runSdkScript('store_filters.py', { url: `${ctx.baseUrl}/langgraph`, key: ADMIN_KEY });
    expect(result.cases).toBe(13);
  });

  it("keeps each organization's items apart", async () => {
    const put = await ctx.call('PUT', '/langgraph/store/items', {
      body: { namespace: ['secrets'], key: 'k', value: { mine: true } },
    });
    expect(put.statusCode, put.body).toBe(204);
    const org = await ctx.call('POST', '/v1/organizations', { body: { name: 'other' } });
    const other = { key: org.json().api_key.key as string };
    const seen = await ctx.call('GET', '/langgraph/store/items?namespace=secrets&key=k', other);
    expect(seen.statusCode).toBe(200);
    expect(seen.json()).toBeNull();
    const searched = await ctx.call('POST', '/langgraph/store/items/search', { ...other, body: {} });
    expect(searched.json()).toEqual({ items: [] });
    const mine = await ctx.call('GET', '/langgraph/store/items?namespace=secrets&key=k');
    expect(mine.json().value).toEqual({ mine: true });
  });
});
