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
});
