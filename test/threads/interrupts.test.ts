import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext, waitForRun } from '../runs/helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: answers of the API, checked by the tests' expectations.
type Json = any;

describe('threads: checkpoints, interrupts and commands (CONTRACTS §9)', () => {
  let ctx: RunContext;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createRunContext();
    deploymentId = (await deploy(ctx, crew('interrupting.mjs'))).deploymentId;
  });
  afterAll(() => ctx.close());

  async function createThread(values?: Record<string, unknown>): Promise<string> {
    const body = { deployment_id: deploymentId, ...(values ? { values } : {}) };
    const response = await ctx.call('POST', '/v1/threads', { body });
    expect(response.statusCode).toBe(200);
    return response.json().thread_id;
  }

  const getThread = async (id: string): Promise<Json> => (await ctx.call('GET', `/v1/threads/${id}`)).json();

  async function runToEnd(threadId: string, body: Record<string, unknown>): Promise<Json> {
    const response = await ctx.call('POST', `/v1/threads/${threadId}/runs`, { body });
    expect(response.statusCode).toBe(202);
    return waitForRun(ctx, response.json().run_id);
  }

  async function eventsOf(runId: string): Promise<Json[]> {
    const rows = await ctx.database.handle.db
      .selectFrom('run_events')
      .select(['type', 'data'])
      .where('run_id', '=', runId)
      .orderBy('seq')
      .execute();
    return rows;
  }

  const stdinOf = async (runId: string) => (await eventsOf(runId)).find((event) => event.type === 'stdin')?.data;

  it('interrupts, resumes with a command from the last checkpoint, and goes on: three runs', async () => {
    const id = await createThread({ topic: 'tea' });

    // 1: a plain step; its checkpoint is stored with the thread's.
    const first = await runToEnd(id, { input: {} });
    expect(first).toMatchObject({ status: 'succeeded', output: { step: 1 } });
    expect(await stdinOf(first.id)).toEqual({
      run_id: first.id,
      input: {},
      thread: { thread_id: id, values: { topic: 'tea' }, checkpoint: null },
      command: null,
    });

    // 2: stops at an interrupt; the thread is interrupted and shows it.
    const second = await runToEnd(id, { input: { ask: 'green or black?' } });
    const interrupts = [{ id: 'ask-2', value: { question: 'green or black?' } }];
    expect(second).toMatchObject({ status: 'succeeded', output: { interrupts } });
    expect((await stdinOf(second.id)).thread.checkpoint).toEqual({ step: 1 });
    const interrupted = await getThread(id);
    expect(interrupted).toMatchObject({
      status: 'interrupted',
      interrupts,
      values: { topic: 'tea', asked: 'green or black?' },
    });
    const events = await eventsOf(second.id);
    expect(events.map((event) => event.type)).toEqual(['run.started', 'stdin', 'run.interrupted', 'run.completed']);
    expect(events[2].data).toEqual({
      interrupts,
      values: { topic: 'tea', asked: 'green or black?' },
      checkpoint: { step: 2, waiting: 'green or black?' },
    });
    expect(events[3].data).toEqual({ status: 'succeeded', output: { interrupts } });
    const listed = (await ctx.call('GET', `/v1/threads?deployment_id=${deploymentId}&status=interrupted`)).json();
    expect(listed.threads.map((thread: Json) => thread.thread_id)).toContain(id);

    // 3: resumes with a command; the runner sees it and the interrupted run's checkpoint.
    const command = { resume: 'green', update: { cups: 2 } };
    const third = await runToEnd(id, { command });
    expect(third).toMatchObject({
      status: 'succeeded',
      input: {},
      output: { resumed: 'green', from: { step: 2, waiting: 'green or black?' } },
    });
    expect(await stdinOf(third.id)).toEqual({
      run_id: third.id,
      input: {},
      thread: {
        thread_id: id,
        values: { topic: 'tea', asked: 'green or black?' },
        checkpoint: { step: 2, waiting: 'green or black?' },
      },
      command,
    });
    expect(await getThread(id)).toMatchObject({
      status: 'idle',
      interrupts: [],
      values: { topic: 'tea', asked: 'green or black?', cups: 2, answer: 'green' },
    });
    const stored = await ctx.database.handle.db
      .selectFrom('thread_checkpoints')
      .select(['run_id', 'checkpoint'])
      .where('thread_id', '=', id)
      .orderBy('created_at')
      .execute();
    expect(stored).toEqual([
      { run_id: first.id, checkpoint: { step: 1 } },
      { run_id: second.id, checkpoint: { step: 2, waiting: 'green or black?' } },
      { run_id: third.id, checkpoint: { step: 3, resumed: true } },
    ]);
  });

  it('starts a runner from the values after a PATCH: the checkpoint is null again', async () => {
    const id = await createThread();
    await runToEnd(id, { input: {} });
    const patched = await ctx.call('PATCH', `/v1/threads/${id}`, { body: { values: { fresh: true } } });
    expect(patched.statusCode).toBe(200);
    const next = await runToEnd(id, { input: {} });
    expect((await stdinOf(next.id)).thread).toEqual({ thread_id: id, values: { fresh: true }, checkpoint: null });
    expect(next.output).toEqual({ step: 1 });
  });

  it('lets a new run start on an interrupted thread without a command, clearing its interrupts', async () => {
    const id = await createThread();
    await runToEnd(id, { input: { ask: 'why?' } });
    expect((await getThread(id)).status).toBe('interrupted');
    const response = await ctx.call('POST', `/v1/threads/${id}/runs`, { body: { input: {} } });
    expect(response.statusCode).toBe(202);
    // Cleared as the run takes the thread, not only when it ends.
    const during = await getThread(id);
    if (during.status === 'busy') expect(during.interrupts).toEqual([]);
    await waitForRun(ctx, response.json().run_id);
    expect(await getThread(id)).toMatchObject({ status: 'idle', interrupts: [] });
  });

  it('answers 400 to a command on a thread that is not interrupted, and to a malformed command', async () => {
    const id = await createThread({ keep: 1 });
    const idle = await ctx.call('POST', `/v1/threads/${id}/runs`, { body: { command: { resume: 'x' } } });
    expect(idle.statusCode).toBe(400);
    expect(idle.json().error).toEqual({
      code: 'bad_request',
      message: `command: thread ${id} is idle, not interrupted; send input without command to start a new turn`,
    });
    const malformed = await ctx.call('POST', `/v1/threads/${id}/runs`, { body: { command: { goto: 'x' } } });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error.message).toMatch(/^command/);
    const notObject = await ctx.call('POST', `/v1/threads/${id}/runs`, { body: { command: { update: [1] } } });
    expect(notObject.statusCode).toBe(400);
    expect(notObject.json().error.message).toMatch(/^command\.update/);
    // Nothing was started or changed.
    expect((await ctx.call('GET', `/v1/runs?thread_id=${id}`)).json().total).toBe(0);
    expect(await getThread(id)).toMatchObject({ status: 'idle', values: { keep: 1 } });
  });

  it('fails a run whose run.interrupted line is malformed, with a clear error, and keeps the values', async () => {
    const id = await createThread({ keep: 2 });
    const cases = {
      interrupts: 'Runner interrupt data.interrupts must be a JSON array of {"id"?: string, "value": any} objects',
      values: 'Runner interrupt values must be a JSON object',
      interrupt_id: 'Runner interrupt data.interrupts must be a JSON array of {"id"?: string, "value": any} objects',
    };
    for (const [bad, error] of Object.entries(cases)) {
      const run = await runToEnd(id, { input: { bad } });
      expect(run).toMatchObject({ status: 'failed', error_message: error });
      expect(await getThread(id)).toMatchObject({ status: 'error', values: { keep: 2 }, interrupts: [] });
    }
  });
});
