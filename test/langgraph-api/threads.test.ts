import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/app.js';
import { explainWithoutPython, testPython } from '../python/helpers.js';
import { type RunContext, waitForRun } from '../runs/helpers.js';
import { runSdkScript, startWithAgent } from './helpers.js';

explainWithoutPython('LangGraph API threads through langgraph-sdk');

describe.runIf(testPython() !== null)('LangGraph API threads through langgraph-sdk', () => {
  let ctx: RunContext;
  let deploymentId: string;
  let url: string;

  beforeAll(async () => {
    ({ ctx, deploymentId, url } = await startWithAgent());
  }, 60_000);
  afterAll(async () => ctx?.close());

  /** A thread of the agent stopped at its approval interrupt, through /v1. */
  async function interruptedThread(): Promise<string> {
    const thread = await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } });
    const threadId = thread.json().thread_id as string;
    const run = await ctx.call('POST', `/v1/threads/${threadId}/runs`, { body: { input: { question: 'Two words?' } } });
    expect(run.statusCode, run.body).toBe(202);
    const ended = await waitForRun(ctx, run.json().run_id, undefined, 60_000);
    expect(ended.status, ended.error_message).toBe('succeeded');
    return threadId;
  }

  it('creates, finds, copies and deletes threads and reads their state with both clients', {
    timeout: 120_000,
  }, async () => {
    const interrupted = await interruptedThread();
    const result = await runSdkScript('threads.py', { url, key: ADMIN_KEY, INTERRUPTED_THREAD: interrupted });
    // The same thread, by its UUID, through /v1: no deployment until its first run binds one.
    const v1 = await ctx.call('GET', `/v1/threads/${result.chosen}`);
    expect(v1.statusCode, v1.body).toBe(200);
    expect(v1.json()).toMatchObject({ thread_id: result.chosen, deployment_id: null, values: { note: 'hello' } });
  });

  it("updates a graph thread's state with the graph's own update_state, and each state of its history has its next", {
    timeout: 180_000,
  }, async () => {
    // test/langgraph-api/sdk/state.py passes against `langgraph dev` (OFFICIAL=1) too.
    const result = await runSdkScript('state.py', { url, key: ADMIN_KEY });
    // crewd keeps one checkpoint per run and per update: the as_node update, the update, the run's stop.
    expect(result.history_next).toEqual([[], ['approval'], ['approval']]);
    // The updates are crewd runs of the deployment (GET /v1 shows them); the LangGraph API lists none.
    const v1Runs = await ctx.call('GET', `/v1/runs?thread_id=${result.thread}`);
    expect(v1Runs.statusCode, v1Runs.body).toBe(200);
    expect(v1Runs.json().runs).toHaveLength(4);
  });

  it("answers 404 for another organization's thread and 409 for its taken id", async () => {
    const mine = (await ctx.call('POST', '/langgraph/threads', { body: {} })).json().thread_id as string;
    const org = await ctx.call('POST', '/v1/organizations', { body: { name: 'other' } });
    const otherKey = org.json().api_key.key as string;
    const as = { key: null, headers: { 'x-api-key': otherKey } };
    expect((await ctx.call('GET', `/langgraph/threads/${mine}`, as)).statusCode).toBe(404);
    expect((await ctx.call('GET', `/langgraph/threads/${mine}/state`, as)).statusCode).toBe(404);
    const taken = await ctx.call('POST', '/langgraph/threads', {
      ...as,
      body: { thread_id: mine, if_exists: 'do_nothing' },
    });
    expect(taken.statusCode).toBe(409);
    const v1Run = await ctx.call('POST', `/v1/threads/${mine}/runs`, { body: { input: {} } });
    expect(v1Run.statusCode).toBe(400);
    expect(v1Run.json().error.message).toContain('has no deployment yet');
    const notServed = await ctx.call('POST', `/langgraph/threads/${mine}/commands`, { body: {} });
    expect(notServed.statusCode).toBe(404);
    expect(notServed.json().detail).toContain('CONTRACTS §14');
  });
});
