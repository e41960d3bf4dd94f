import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext, waitForRun } from '../runs/helpers.js';

describe('threads', () => {
  let ctx: RunContext;
  let deploymentId: string;
  let slowDeployment: string;

  beforeAll(async () => {
    ctx = await createRunContext();
    deploymentId = (await deploy(ctx, crew('thread-counter.mjs'))).deploymentId;
    slowDeployment = (await deploy(ctx, crew('slow.mjs'))).deploymentId;
  });
  afterAll(() => ctx.close());

  async function createThread(body: Record<string, unknown> = {}, key?: string) {
    const response = await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId, ...body }, key });
    expect(response.statusCode).toBe(200);
    return response.json();
  }

  async function runInThread(threadId: string, input: Record<string, unknown> = {}, headers?: Record<string, string>) {
    return ctx.call('POST', `/v1/threads/${threadId}/runs`, { body: { input }, headers });
  }

  it('creates a thread: idle, with metadata and values, thread_id not id', async () => {
    const thread = await createThread({ metadata: { user: 'ada' } });
    expect(thread).toEqual({
      thread_id: expect.stringMatching(/^thr_/),
      deployment_id: deploymentId,
      status: 'idle',
      metadata: { user: 'ada' },
      values: null,
      interrupts: [],
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
    });
    const withValues = await createThread({ values: { turns: 5 } });
    expect(withValues.values).toEqual({ turns: 5 });
    expect(withValues.metadata).toEqual({});
    const fetched = await ctx.call('GET', `/v1/threads/${thread.thread_id}`);
    expect(fetched.json()).toEqual(thread);
  });

  it('validates thread creation', async () => {
    const missing = await ctx.call('POST', '/v1/threads', { body: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.message).toBe('deployment_id is required');
    const unknown = await ctx.call('POST', '/v1/threads', { body: { deployment_id: 'dep_nope' } });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.message).toBe('Deployment not found');
    const notFound = await ctx.call('GET', '/v1/threads/thr_nope');
    expect(notFound.statusCode).toBe(404);
    expect(notFound.json().error).toEqual({ message: 'Thread not found', code: 'not_found' });
  });

  it('keeps a multi-turn conversation: values through the runner, checkpoints, history', async () => {
    const thread = await createThread();
    const id = thread.thread_id as string;
    const first = await runInThread(id, { message: 'hello' });
    expect(first.statusCode).toBe(202);
    expect(first.json()).toEqual({
      run_id: expect.stringMatching(/^run_/),
      thread_id: id,
      version_id: expect.stringMatching(/^ver_/),
      version_number: 1,
      status: 'running',
    });
    const run1 = await waitForRun(ctx, first.json().run_id);
    expect(run1).toMatchObject({ status: 'succeeded', thread_id: id, output: { reply: 'turn 1' } });
    const after1 = (await ctx.call('GET', `/v1/threads/${id}`)).json();
    expect(after1).toMatchObject({ status: 'idle', values: { turns: 1, messages: ['hello'] } });

    const second = await runInThread(id, { message: 'again' });
    await waitForRun(ctx, second.json().run_id);
    const after2 = (await ctx.call('GET', `/v1/threads/${id}`)).json();
    expect(after2.values).toEqual({ turns: 2, messages: ['hello', 'again'] });

    const history = (await ctx.call('GET', `/v1/threads/${id}/history`)).json();
    expect(history.checkpoints).toEqual([
      {
        checkpoint_id: expect.stringMatching(/^chk_/),
        thread_id: id,
        run_id: second.json().run_id,
        values: { turns: 2, messages: ['hello', 'again'] },
        created_at: expect.stringMatching(/Z$/),
      },
      expect.objectContaining({ run_id: first.json().run_id, values: { turns: 1, messages: ['hello'] } }),
    ]);
    const paged = (await ctx.call('GET', `/v1/threads/${id}/history?limit=1&offset=1`)).json();
    expect(paged.checkpoints.map((c: { run_id: string }) => c.run_id)).toEqual([first.json().run_id]);

    const runs = (await ctx.call('GET', `/v1/runs?thread_id=${id}`)).json();
    expect(runs.total).toBe(2);
  });

  it('merges the output into the values when the runner gives no values', async () => {
    const thread = await createThread({ values: { keep: true } });
    const response = await runInThread(thread.thread_id, { mode: 'merge', message: 'm' });
    await waitForRun(ctx, response.json().run_id);
    const after = (await ctx.call('GET', `/v1/threads/${thread.thread_id}`)).json();
    expect(after.values).toEqual({ keep: true, last: 'm' });
  });

  it('passes the thread to the runner on stdin and in CREWD_THREAD_ID', async () => {
    const { deploymentId: inspect } = await deploy(ctx, crew('inspect.mjs'));
    const created = await ctx.call('POST', '/v1/threads', { body: { deployment_id: inspect, values: { a: 1 } } });
    const threadId = created.json().thread_id;
    const response = await ctx.call('POST', `/v1/threads/${threadId}/runs`, { body: { input: { q: 1 } } });
    const run = await waitForRun(ctx, response.json().run_id);
    expect(run.output.stdin).toEqual({
      run_id: run.id,
      input: { q: 1 },
      thread: { thread_id: threadId, values: { a: 1 }, checkpoint: null },
      command: null,
    });
    expect(run.output.env.CREWD_THREAD_ID).toBe(threadId);
  });

  it('goes to error after a failed run, keeps its values, and accepts a new run', async () => {
    const thread = await createThread({ values: { turns: 7 } });
    const failed = await runInThread(thread.thread_id, { mode: 'fail' });
    expect((await waitForRun(ctx, failed.json().run_id)).status).toBe('failed');
    const after = (await ctx.call('GET', `/v1/threads/${thread.thread_id}`)).json();
    expect(after).toMatchObject({ status: 'error', values: { turns: 7 } });
    expect((await ctx.call('GET', `/v1/threads/${thread.thread_id}/history`)).json().checkpoints).toEqual([]);

    const retry = await runInThread(thread.thread_id, { message: 'retry' });
    expect(retry.statusCode).toBe(202);
    await waitForRun(ctx, retry.json().run_id);
    const recovered = (await ctx.call('GET', `/v1/threads/${thread.thread_id}`)).json();
    expect(recovered).toMatchObject({ status: 'idle', values: { turns: 8, messages: ['retry'] } });
  });

  it('is busy while a run executes: 409 naming the run; idle again after cancel', async () => {
    const created = await ctx.call('POST', '/v1/threads', { body: { deployment_id: slowDeployment } });
    const id = created.json().thread_id as string;
    const first = await ctx.call('POST', `/v1/threads/${id}/runs`, { body: {} });
    expect(first.statusCode).toBe(202);
    const runId = first.json().run_id;
    expect((await ctx.call('GET', `/v1/threads/${id}`)).json().status).toBe('busy');
    expect((await ctx.call('GET', `/v1/threads?deployment_id=${slowDeployment}&status=busy`)).json().threads).toEqual([
      expect.objectContaining({ thread_id: id }),
    ]);

    const second = await ctx.call('POST', `/v1/threads/${id}/runs`, { body: {} });
    expect(second.statusCode).toBe(409);
    expect(second.json()).toEqual({ error: { message: `Thread ${id} is busy with run ${runId}`, code: 'conflict' } });
    const viaRuns = await ctx.call('POST', '/v1/runs', { body: { deployment_id: slowDeployment, thread_id: id } });
    expect(viaRuns.statusCode).toBe(409);

    const patchValues = await ctx.call('PATCH', `/v1/threads/${id}`, { body: { values: { x: 1 } } });
    expect(patchValues.statusCode).toBe(409);
    const patchMetadata = await ctx.call('PATCH', `/v1/threads/${id}`, { body: { metadata: { tag: 'busy' } } });
    expect(patchMetadata.statusCode).toBe(200);
    const remove = await ctx.call('DELETE', `/v1/threads/${id}`);
    expect(remove.statusCode).toBe(409);
    expect(remove.json().error.message).toBe(`Thread ${id} is busy with run ${runId}`);

    await ctx.call('POST', `/v1/runs/${runId}/cancel`);
    const after = (await ctx.call('GET', `/v1/threads/${id}`)).json();
    expect(after).toMatchObject({ status: 'idle', metadata: { tag: 'busy' }, values: null });
  });

  it('lets exactly one of many concurrent requests start a run in an idle thread', async () => {
    const created = await ctx.call('POST', '/v1/threads', { body: { deployment_id: slowDeployment } });
    const id = created.json().thread_id as string;
    const responses = await Promise.all(
      Array.from({ length: 25 }, () => ctx.call('POST', `/v1/threads/${id}/runs`, { body: { input: {} } })),
    );
    const codes = responses.map((response) => response.statusCode);
    expect(codes.filter((code) => code === 202)).toHaveLength(1);
    expect(codes.filter((code) => code === 409)).toHaveLength(24);
    const winner = responses.find((response) => response.statusCode === 202)?.json().run_id;
    // The losers held no slot, so the winner really runs.
    expect(responses.find((response) => response.statusCode === 202)?.json().status).toBe('running');
    for (const response of responses.filter((r) => r.statusCode === 409)) {
      expect(response.json().error.message).toBe(`Thread ${id} is busy with run ${winner}`);
    }
    const runs = (await ctx.call('GET', `/v1/runs?thread_id=${id}`)).json();
    expect(runs.total).toBe(1);
    await ctx.call('POST', `/v1/runs/${winner}/cancel`);
  });

  it('lists threads of a deployment: deployment_id required, status filter, limit and offset', async () => {
    const { deploymentId: own } = await deploy(ctx, crew('thread-counter.mjs'));
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      ids.push((await ctx.call('POST', '/v1/threads', { body: { deployment_id: own } })).json().thread_id);
    }
    const missing = await ctx.call('GET', '/v1/threads');
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toEqual({ message: 'deployment_id is required', code: 'bad_request' });

    const page = (await ctx.call('GET', `/v1/threads?deployment_id=${own}`)).json();
    expect(page.threads).toHaveLength(20);
    expect(page.threads[0].thread_id).toBe(ids.at(-1));
    const rest = (await ctx.call('GET', `/v1/threads?deployment_id=${own}&offset=20`)).json();
    expect(rest.threads.map((t: { thread_id: string }) => t.thread_id)).toEqual(ids.slice(0, 5).reverse());
    const clamped = await ctx.call('GET', `/v1/threads?deployment_id=${own}&limit=5000`);
    expect(clamped.statusCode).toBe(200);
    expect(clamped.json().threads).toHaveLength(25);
    const idle = (await ctx.call('GET', `/v1/threads?deployment_id=${own}&status=idle&limit=2`)).json();
    expect(idle.threads).toHaveLength(2);
    const errored = (await ctx.call('GET', `/v1/threads?deployment_id=${own}&status=error`)).json();
    expect(errored.threads).toEqual([]);
    const badStatus = await ctx.call('GET', `/v1/threads?deployment_id=${own}&status=sleeping`);
    expect(badStatus.statusCode).toBe(400);
  });

  it('PATCHes metadata and values (a checkpoint records the new values) and DELETEs a thread', async () => {
    const thread = await createThread({ metadata: { a: 1 }, values: { v: 1 } });
    const id = thread.thread_id as string;
    const patched = await ctx.call('PATCH', `/v1/threads/${id}`, { body: { metadata: { b: 2 }, values: { v: 2 } } });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ metadata: { b: 2 }, values: { v: 2 }, status: 'idle' });
    const history = (await ctx.call('GET', `/v1/threads/${id}/history`)).json();
    expect(history.checkpoints).toEqual([expect.objectContaining({ run_id: null, values: { v: 2 } })]);
    const cleared = await ctx.call('PATCH', `/v1/threads/${id}`, { body: { values: null } });
    expect(cleared.json().values).toBeNull();
    const bad = await ctx.call('PATCH', `/v1/threads/${id}`, { body: { status: 'busy' } });
    expect(bad.statusCode).toBe(400);

    const run = await runInThread(id, { message: 'x' });
    // Read once finished, so the answer is cached: the delete must drop it.
    await waitForRun(ctx, run.json().run_id);
    const removed = await ctx.call('DELETE', `/v1/threads/${id}`);
    expect(removed.statusCode).toBe(200);
    expect(removed.json()).toEqual({ success: true });
    expect((await ctx.call('GET', `/v1/threads/${id}`)).statusCode).toBe(404);
    expect((await ctx.call('GET', `/v1/threads/${id}/history`)).statusCode).toBe(404);
    expect((await ctx.call('DELETE', `/v1/threads/${id}`)).statusCode).toBe(404);
    // The run stays, no longer tied to the thread.
    expect((await ctx.call('GET', `/v1/runs/${run.json().run_id}`)).json().thread_id).toBeNull();
  });

  it('scopes threads to their organization and deployment', async () => {
    const thread = await createThread();
    const id = thread.thread_id as string;
    const org = await ctx.call('POST', '/v1/organizations', { body: { name: 'elsewhere' } });
    const other = org.json().api_key.key as string;
    for (const [method, url, body] of [
      ['GET', `/v1/threads/${id}`, undefined],
      ['GET', `/v1/threads/${id}/history`, undefined],
      ['PATCH', `/v1/threads/${id}`, { metadata: {} }],
      ['DELETE', `/v1/threads/${id}`, undefined],
      ['POST', `/v1/threads/${id}/runs`, { input: {} }],
    ] as const) {
      const response = await ctx.call(method, url, { key: other, body });
      expect(response.statusCode).toBe(404);
      expect(response.json().error.message).toBe('Thread not found');
    }
    const list = await ctx.call('GET', `/v1/threads?deployment_id=${deploymentId}`, { key: other });
    expect(list.json().threads).toEqual([]);

    // A thread runs only against its own deployment.
    const { deploymentId: otherDeployment } = await deploy(ctx, crew('thread-counter.mjs'));
    const mismatch = await ctx.call('POST', '/v1/runs', { body: { deployment_id: otherDeployment, thread_id: id } });
    expect(mismatch.statusCode).toBe(400);
    expect(mismatch.json().error.message).toBe(`thread_id: thread ${id} belongs to deployment ${deploymentId}`);
    expect((await ctx.call('GET', `/v1/threads/${id}`)).json().status).toBe('idle');
    const foreign = await ctx.call('POST', '/v1/runs', {
      key: other,
      body: { deployment_id: deploymentId, thread_id: id },
    });
    expect(foreign.statusCode).toBe(404);
  });

  it('answers the first response again for a reused Idempotency-Key on a thread run', async () => {
    const thread = await createThread();
    const id = thread.thread_id as string;
    const headers = { 'idempotency-key': 'turn-1' };
    const first = await runInThread(id, { message: 'once' }, headers);
    await waitForRun(ctx, first.json().run_id);
    const second = await runInThread(id, { message: 'once' }, headers);
    expect(second.statusCode).toBe(202);
    expect(second.json()).toEqual(first.json());
    const conflict = await runInThread(id, { message: 'different' }, headers);
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error.message).toMatch(/Idempotency-Key/);
    expect((await ctx.call('GET', `/v1/threads/${id}`)).json().values.turns).toBe(1);
  });

  it('starts a run without a body', async () => {
    const thread = await createThread();
    const response = await ctx.call('POST', `/v1/threads/${thread.thread_id}/runs`);
    expect(response.statusCode).toBe(202);
    await waitForRun(ctx, response.json().run_id);
  });
});
