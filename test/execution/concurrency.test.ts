import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRunContext,
  crew,
  dataOf,
  deploy,
  type RunContext,
  readStream,
  startRun,
  waitForRun,
} from '../runs/helpers.js';

describe('MAX_CONCURRENT_RUNS', () => {
  let ctx: RunContext;
  let slow: string;
  let trivial: string;

  beforeAll(async () => {
    ctx = await createRunContext({ MAX_CONCURRENT_RUNS: '2' });
    slow = (await deploy(ctx, crew('slow.mjs'))).deploymentId;
    trivial = (await deploy(ctx, crew('trivial.mjs'))).deploymentId;
  });
  afterAll(() => ctx.close());

  it('queues runs past the limit as pending and starts them in order as slots free', async () => {
    const first = await startRun(ctx, slow);
    const second = await startRun(ctx, slow);
    const third = await startRun(ctx, slow);
    const fourth = await startRun(ctx, trivial, { n: 4 });
    expect([first.status, second.status, third.status, fourth.status]).toEqual([
      'running',
      'running',
      'pending',
      'pending',
    ]);
    const queued = (await ctx.call('GET', `/v1/runs/${third.run_id}`)).json();
    expect(queued).toMatchObject({ status: 'pending', started_at: null, completed_at: null });

    // A stream opened on a queued run follows it once it starts.
    const streamed = readStream(`${ctx.baseUrl}/v1/runs/${fourth.run_id}/events`);

    await ctx.call('POST', `/v1/runs/${first.run_id}/cancel`);
    const thirdRunning = await waitForRun(ctx, third.run_id, ['running']);
    expect(thirdRunning.started_at).not.toBeNull();
    expect((await ctx.call('GET', `/v1/runs/${fourth.run_id}`)).json().status).toBe('pending');

    await ctx.call('POST', `/v1/runs/${second.run_id}/cancel`);
    const done = await waitForRun(ctx, fourth.run_id);
    expect(done).toMatchObject({ status: 'succeeded', output: { echo: { n: 4 } } });
    const events = dataOf((await streamed).messages);
    expect(events[0]).toMatchObject({ type: 'run.started' });
    expect(events.at(-1)).toMatchObject({ type: 'complete', status: 'succeeded' });

    await ctx.call('POST', `/v1/runs/${third.run_id}/cancel`);
    await waitForRun(ctx, third.run_id);
  });

  it('cancels a pending run, which then never starts', async () => {
    const a = await startRun(ctx, slow);
    const b = await startRun(ctx, slow);
    const queued = await startRun(ctx, trivial);
    expect(queued.status).toBe('pending');
    const cancel = await ctx.call('POST', `/v1/runs/${queued.run_id}/cancel`);
    expect(cancel.json()).toEqual({ success: true, status: 'canceled' });
    const run = (await ctx.call('GET', `/v1/runs/${queued.run_id}`)).json();
    expect(run).toMatchObject({ status: 'canceled', started_at: null });
    expect(run.completed_at).not.toBeNull();
    const stream = await readStream(`${ctx.baseUrl}/v1/runs/${queued.run_id}/events?last_event_id=0`);
    expect(dataOf(stream.messages)).toEqual([
      { type: 'run.canceled', data: { status: 'canceled' } },
      { type: 'complete', status: 'canceled', output: null, error: null },
    ]);
    await ctx.call('POST', `/v1/runs/${a.run_id}/cancel`);
    await ctx.call('POST', `/v1/runs/${b.run_id}/cancel`);
    await waitForRun(ctx, b.run_id);
    expect((await waitForRun(ctx, queued.run_id)).status).toBe('canceled');
  });

  it('never runs more than the limit: each queued run starts after a slot was given back', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await startRun(ctx, trivial, { i })).run_id);
    const runs = [];
    for (const id of ids) runs.push(await waitForRun(ctx, id));
    expect(runs.every((run) => run.status === 'succeeded')).toBe(true);
    const starts = runs.map((run) => Date.parse(run.started_at));
    // In creation order...
    expect([...starts].sort((x, y) => x - y)).toEqual(starts);
    // ...and the third starts no earlier than one of the first two completed, and so on.
    for (let i = 2; i < runs.length; i++) {
      const earlierEnds = runs.slice(0, i).map((run) => Date.parse(run.completed_at));
      const endedBefore = earlierEnds.filter((end) => end <= starts[i]!).length;
      expect(endedBefore).toBeGreaterThanOrEqual(i - 1);
    }
  });
});
