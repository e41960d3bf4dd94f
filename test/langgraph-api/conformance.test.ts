import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/app.js';
import { explainWithoutPython, testPython } from '../python/helpers.js';
import type { RunContext } from '../runs/helpers.js';
import { runSdkScript } from './helpers.js';
import { startWithTokenGraph } from './runs-helpers.js';

explainWithoutPython('LangGraph API answers as the official server does');

describe.runIf(testPython() !== null)('LangGraph API answers as the official server does', () => {
  let ctx: RunContext;
  let url: string;

  beforeAll(async () => {
    ({ ctx, url } = await startWithTokenGraph());
  }, 60_000);
  afterAll(async () => ctx?.close());

  it('answers as langgraph dev does where SDK code relies on it (sdk/conformance.py), and the JS SDK pages too', {
    timeout: 240_000,
  }, async () => {
    // test/langgraph-api/sdk/conformance.py passes against `langgraph dev` (OFFICIAL=1) too.
    const result = await runSdkScript('conformance.py', { url, key: ADMIN_KEY });
    // The JS SDK pages assistants by the same header.
    const client = new Client({ apiUrl: url, apiKey: ADMIN_KEY });
    const first = await client.assistants.search({ metadata: { tag: result.tag }, limit: 2, includePagination: true });
    expect(first.assistants).toHaveLength(2);
    expect(first.next).toBe('2');
    const last = await client.assistants.search({
      metadata: { tag: result.tag },
      limit: 2,
      offset: 2,
      includePagination: true,
    });
    expect(last.assistants).toHaveLength(1);
    expect(last.next).toBeNull();
  });

  it('answers a body it cannot read 422 with a detail, as CONTRACTS §14 says of a bad body; /v1 still 400', async () => {
    const headers = { 'content-type': 'application/json' };
    const unparsable = await ctx.call('POST', '/langgraph/threads/search', { body: '{"limit": ', headers });
    expect(unparsable.statusCode).toBe(422);
    expect(unparsable.json()).toEqual({ detail: 'Body is not valid JSON' });
    const nul = await ctx.call('POST', '/langgraph/threads', { body: '{"metadata": {"a": "\\u0000"}}', headers });
    expect(nul.statusCode).toBe(422);
    expect(nul.json().detail).toMatch(/NUL character/);
    const v1 = await ctx.call('POST', '/v1/threads', { body: '{', headers });
    expect(v1.statusCode).toBe(400);
  });

  it('sends the paging headers on crons searches too', async () => {
    const crons = await Promise.all(
      [0, 1].map(() =>
        ctx.call('POST', '/langgraph/runs/crons', { body: { assistant_id: 'chat', schedule: '0 0 * * *' } }),
      ),
    );
    for (const cron of crons) expect(cron.statusCode, cron.body).toBe(200);
    const page = await ctx.call('POST', '/langgraph/runs/crons/search', { body: { limit: 1 } });
    expect(page.json()).toHaveLength(1);
    expect(page.headers).toMatchObject({ 'x-pagination-next': '1', 'x-pagination-total': '2' });
    const end = await ctx.call('POST', '/langgraph/runs/crons/search', { body: { limit: 1, offset: 1 } });
    expect(end.headers['x-pagination-next']).toBeUndefined();
    expect(end.headers['x-pagination-total']).toBe('2');
  });
});
