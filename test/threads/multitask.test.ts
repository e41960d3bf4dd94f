import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext, until, waitForRun } from '../runs/helpers.js';
import { expectNoOverlap, type Json, lockFolder, runsOf, startOrder, threadRun, waitAll } from './multitask-helpers.js';

describe('threads: multitask strategies (CONTRACTS §10)', () => {
  let ctx: RunContext;
  let deploymentId: string;
  const locks = lockFolder();

  beforeAll(async () => {
    // exclusive.mjs shares a lock folder between runs, which the sandbox by design does not allow.
    ctx = await createRunContext({ RUNNER_SANDBOX: 'off' });
    deploymentId = (await deploy(ctx, crew('exclusive.mjs'))).deploymentId;
  });
  afterAll(async () => {
    await ctx.close();
    locks.remove();
  });

  async function createThread(values?: Record<string, unknown>): Promise<string> {
    const body = { deployment_id: deploymentId, ...(values ? { values } : {}) };
    return (await ctx.call('POST', '/v1/threads', { body })).json().thread_id;
  }
  const getThread = async (id: string): Promise<Json> => (await ctx.call('GET', `/v1/threads/${id}`)).json();
  const input = (extra: Record<string, unknown> = {}) => ({ lock_dir: locks.dir, ...extra });
  const storedEvents = (runId: string) =>
    ctx.database.handle.db
      .selectFrom('run_events')
      .select(['seq', 'type'])
      .where('run_id', '=', runId)
      .orderBy('seq')
      .execute();
  const eventTypes = async (runId: string) => (await storedEvents(runId)).map((row) => row.type);
  /** An ended run's stored events: numbered 1, 2, 3… without a gap, the one terminal event last. */
  const expectEndedEvents = async (runId: string, terminal: string) => {
    const events = await storedEvents(runId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((event) => /^run\.(completed|failed|canceled)$/.test(event.type))).toEqual([
      { seq: events.length, type: terminal },
    ]);
  };

  it('enqueue: twenty concurrent requests on a busy thread run one at a time, in creation order', async () => {
    const id = await createThread();
    // The first run works until the twenty have been answered, however slowly they come.
    const go = path.join(locks.dir, `${id}.go`);
    const first = await threadRun(ctx, id, { input: input({ n: 'first', until_file: go }) });
    expect(first.json.status).toBe('running');
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        threadRun(ctx, id, { input: input({ n, ms: 20 }), multitask_strategy: 'enqueue' }),
      ),
    );
    for (const response of responses) {
      expect(response.statusCode).toBe(202);
      expect(response.json).toMatchObject({ thread_id: id, status: 'pending' });
    }
    writeFileSync(go, '');
    await waitAll(ctx, [first.json.run_id, ...responses.map((response) => response.json.run_id)]);
    const runs = await runsOf(ctx, id);
    expectNoOverlap(runs);
    expect(runs.map((run) => run.status)).toEqual(Array(21).fill('succeeded'));
    // Served in the order they were created, each after the one before ended.
    expect(startOrder(locks.dir, id)).toEqual(runs.map((run) => run.id));
    const thread = await getThread(id);
    expect(thread.status).toBe('idle');
    expect(thread.values.seen).toEqual(runs.map((run) => run.input.n));
    // Twenty-one runs one after another, each a process: 3-4 s on a quiet machine, over 30 s at CI's load of 12-18.
  }, 120_000);

  it('enqueue on a thread that is not busy starts at once; reject stays the default', async () => {
    const id = await createThread();
    // It runs until canceled: the thread stays busy through every request below, however slow the machine.
    const started = await threadRun(ctx, id, { input: input({ ms: 60_000 }), multitask_strategy: 'enqueue' });
    expect(started).toMatchObject({ statusCode: 202, json: { status: 'running' } });
    const rejected = await threadRun(ctx, id, { input: input() });
    expect(rejected.statusCode).toBe(409);
    expect(rejected.json.error.message).toBe(`Thread ${id} is busy with run ${started.json.run_id}`);
    const bad = await threadRun(ctx, id, { input: input(), multitask_strategy: 'later' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json.error.message).toMatch(/^multitask_strategy/);
    const command = await threadRun(ctx, id, { command: { resume: 1 }, multitask_strategy: 'enqueue' });
    expect(command.statusCode).toBe(400);
    expect(command.json.error.message).toMatch(new RegExp(`^command: thread ${id} is busy`));
    await ctx.call('POST', `/v1/runs/${started.json.run_id}/cancel`);
    expect((await waitForRun(ctx, started.json.run_id)).status).toBe('canceled');
    expect((await runsOf(ctx, id)).length).toBe(1);
  });

  it('a canceled queued run leaves the queue; a failed or canceled holder hands the thread on', async () => {
    const id = await createThread();
    const holder = await threadRun(ctx, id, { input: input({ n: 'a', ms: 60_000 }) });
    const queued = [];
    for (const n of ['b', 'c', 'd']) {
      queued.push(
        (await threadRun(ctx, id, { input: input({ n, fail: n === 'c' }), multitask_strategy: 'enqueue' })).json,
      );
    }
    await until(async () => startOrder(locks.dir, id).length === 1);
    const canceled = await ctx.call('POST', `/v1/runs/${queued[0].run_id}/cancel`);
    expect(canceled.json()).toEqual({ success: true, status: 'canceled' });
    // The holder is canceled while running: the next waits for its process, then c fails, then d runs.
    await ctx.call('POST', `/v1/runs/${holder.json.run_id}/cancel`);
    const [b, c, d] = await waitAll(
      ctx,
      queued.map((run) => run.run_id),
    );
    expect([b.status, c.status, d.status]).toEqual(['canceled', 'failed', 'succeeded']);
    expect(c.error_message).toBe('asked to fail');
    expect(await eventTypes(b.id)).toEqual(['run.canceled']);
    expect(startOrder(locks.dir, id)).toEqual([holder.json.run_id, c.id, d.id]);
    expect(await getThread(id)).toMatchObject({ status: 'idle', values: { seen: ['d'] } });
  });

  it('interrupt: the current run is canceled, and the new one starts once its process has stopped', async () => {
    const id = await createThread({ seen: ['before'] });
    const current = await threadRun(ctx, id, { input: input({ n: 'old', ms: 60_000 }) });
    await until(async () => startOrder(locks.dir, id).length === 1);
    const next = await threadRun(ctx, id, { input: input({ n: 'new' }), multitask_strategy: 'interrupt' });
    expect(next.statusCode).toBe(202);
    expect(next.json.status).toBe('pending');
    // Canceled at once, in the same transaction that queued the new run.
    expect((await ctx.call('GET', `/v1/runs/${current.json.run_id}`)).json().status).toBe('canceled');
    expect((await getThread(id)).status).toBe('busy');
    const ran = await waitForRun(ctx, next.json.run_id);
    expect(ran).toMatchObject({ status: 'succeeded', error_message: null });
    expect(startOrder(locks.dir, id)).toEqual([current.json.run_id, next.json.run_id]);
    expect(await getThread(id)).toMatchObject({ status: 'idle', values: { seen: ['before', 'new'] } });
    await expectEndedEvents(current.json.run_id, 'run.canceled');
  });

  it('rollback: the current run is deleted with its events, the values are what they were before it', async () => {
    const id = await createThread({ seen: ['kept'] });
    const done = await threadRun(ctx, id, { input: input({ n: 'one' }) });
    await waitForRun(ctx, done.json.run_id);
    const current = await threadRun(ctx, id, { input: input({ n: 'doomed', ms: 60_000 }) });
    await until(async () => startOrder(locks.dir, id).length === 2);
    const next = await threadRun(ctx, id, { input: input({ n: 'instead' }), multitask_strategy: 'rollback' });
    expect(next.statusCode).toBe(202);
    expect((await ctx.call('GET', `/v1/runs/${current.json.run_id}`)).statusCode).toBe(404);
    expect(await eventTypes(current.json.run_id)).toEqual([]);
    expect((await waitForRun(ctx, next.json.run_id)).status).toBe('succeeded');
    expect(await getThread(id)).toMatchObject({ status: 'idle', values: { seen: ['kept', 'one', 'instead'] } });
    const history = (await ctx.call('GET', `/v1/threads/${id}/history`)).json().checkpoints;
    expect(history.map((checkpoint: Json) => checkpoint.run_id)).toEqual([next.json.run_id, done.json.run_id]);
  });

  it('interrupt: of twenty concurrent requests the last to take the thread runs, never two at once', async () => {
    const id = await createThread();
    const current = await threadRun(ctx, id, { input: input({ n: 'old', ms: 60_000 }) });
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        threadRun(ctx, id, { input: input({ n, ms: 50 }), multitask_strategy: 'interrupt' }),
      ),
    );
    expect(responses.map((response) => response.statusCode)).toEqual(Array(20).fill(202));
    const ids = [current.json.run_id, ...responses.map((response) => response.json.run_id)];
    const ended = await waitAll(ctx, ids);
    expectNoOverlap(ended);
    const succeeded = ended.filter((run) => run.status === 'succeeded');
    expect(succeeded).toHaveLength(1);
    expect(ended.filter((run) => run.status === 'canceled')).toHaveLength(20);
    for (const run of ended)
      await expectEndedEvents(run.id, run.status === 'canceled' ? 'run.canceled' : 'run.completed');
    await until(async () => (await getThread(id)).status === 'idle');
    expect((await getThread(id)).values.seen).toEqual([succeeded[0].input.n]);
  });

  it('interrupt or rollback on a thread that is not busy starts the run at once', async () => {
    const id = await createThread();
    for (const strategy of ['interrupt', 'rollback']) {
      const response = await threadRun(ctx, id, { input: input({ n: strategy }), multitask_strategy: strategy });
      expect(response.json.status).toBe('running');
      expect((await waitForRun(ctx, response.json.run_id)).status).toBe('succeeded');
    }
    expect((await getThread(id)).values.seen).toEqual(['interrupt', 'rollback']);
  });
});
