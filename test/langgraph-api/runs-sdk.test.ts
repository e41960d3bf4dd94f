import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/app.js';
import { explainWithoutPython, testPython } from '../python/helpers.js';
import type { RunContext } from '../runs/helpers.js';
import { runSdkScript } from './helpers.js';
import { startWithTokenGraph } from './runs-helpers.js';

explainWithoutPython('LangGraph API runs through langgraph-sdk');

describe.runIf(testPython() !== null)('LangGraph API runs through langgraph-sdk', () => {
  let ctx: RunContext;
  let url: string;

  beforeAll(async () => {
    ({ ctx, url } = await startWithTokenGraph());
  }, 60_000);
  afterAll(async () => ctx?.close());

  it('creates, streams, waits, joins, cancels and lists runs and resumes an interrupt with both clients', {
    timeout: 240_000,
  }, async () => {
    const result = await runSdkScript('runs.py', { url, key: ADMIN_KEY });
    // The same runs through /v1: the streamed one succeeded, the canceled one is canceled.
    const streamed = await ctx.call('GET', `/v1/runs/${result.streamed}`);
    expect(streamed.statusCode, streamed.body).toBe(200);
    expect(streamed.json()).toMatchObject({ status: 'succeeded', thread_id: result.thread });
    // What the client asked beside the input rides in it under __langgraph__ (docs/runs.md, docs/langgraph.md).
    expect(streamed.json().input).toMatchObject({
      tokens: 3,
      __langgraph__: { assistant_id: expect.any(String), stream_mode: ['values', 'updates', 'messages-tuple'] },
    });
    const canceled = await ctx.call('GET', `/v1/runs/${result.canceled}`);
    expect(canceled.json().status).toBe('canceled');
    const paused = await ctx.call('GET', `/v1/threads/${result.paused}`);
    expect(paused.json()).toMatchObject({ status: 'idle', values: { approved: 'yes' } });
  });

  it('sends Location relative to the API URL, where the SDK picks up a cut wait (…/join) and stream (…/stream)', {
    timeout: 120_000,
  }, async () => {
    const input = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], tokens: 3, ask: true });
    const result = await runSdkScript('locations.py', { url, key: ADMIN_KEY, GRAPH: 'chat', INPUT: input });
    // The SDK joined Location to its base URL, prefix included: no /langgraph/langgraph/….
    const rejoined = [...(result.wait_requests as string[]), ...(result.stream_requests as string[])].filter((line) =>
      line.startsWith('GET '),
    );
    expect(rejoined.some((line) => /^GET \/langgraph\/threads\/[^/]+\/runs\/[^/]+\/join$/.test(line))).toBe(true);
    expect(rejoined.some((line) => /^GET \/langgraph\/threads\/[^/]+\/runs\/[^/]+\/stream$/.test(line))).toBe(true);
    expect(rejoined.every((line) => line.startsWith('GET /langgraph/threads/'))).toBe(true);
    // The headers as sent: Content-Location under the prefix (CONTRACTS §14), Location relative to the API.
    const thread = (await ctx.call('POST', '/langgraph/threads', { body: {} })).json().thread_id as string;
    const waited = await ctx.call('POST', `/langgraph/threads/${thread}/runs/wait`, {
      body: { assistant_id: 'chat', input: JSON.parse(input) },
    });
    expect(waited.statusCode, waited.body).toBe(200);
    const contentLocation = waited.headers['content-location'] as string;
    expect(contentLocation).toMatch(new RegExp(`^/langgraph/threads/${thread}/runs/[^/]+$`));
    expect(waited.headers.location).toBe(`${contentLocation.slice('/langgraph'.length)}/join`);
    const background = await ctx.call('POST', '/langgraph/runs', {
      body: { assistant_id: 'chat', input: JSON.parse(input) },
    });
    expect(background.headers['content-location']).toMatch(/^\/langgraph\/runs\/[^/]+$/);
    expect(background.headers.location).toBeUndefined();
  });
});
