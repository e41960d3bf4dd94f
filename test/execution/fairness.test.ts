import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext, startRun, waitForRun } from '../runs/helpers.js';

/** Run slots shared between organizations: MAX_RUNS_PER_ORGANIZATION (CONTRACTS §12 "Limits"). */
describe('MAX_RUNS_PER_ORGANIZATION', () => {
  describe('default share (three quarters of the slots) once there are two organizations', () => {
    let ctx: RunContext;
    let otherKey: string;
    let otherSlow: string;
    let ownTrivial: string;

    beforeAll(async () => {
      ctx = await createRunContext({ MAX_CONCURRENT_RUNS: '4' });
      const created = await ctx.call('POST', '/v1/organizations', { body: { name: 'other' } });
      expect(created.statusCode).toBe(201);
      otherKey = created.json().api_key.key;
      otherSlow = (await deploy(ctx, crew('slow.mjs'), { key: otherKey })).deploymentId;
      ownTrivial = (await deploy(ctx, crew('trivial.mjs'))).deploymentId;
    });
    afterAll(() => ctx?.close());

    it("starts one organization's run while another's queue holds its share, and the queue goes on oldest first", async () => {
      const queue: Awaited<ReturnType<typeof startRun>>[] = [];
      for (let i = 0; i < 6; i++) queue.push(await startRun(ctx, otherSlow, { i }, otherKey));
      // Three of the four slots: the fourth stays free for other organizations.
      expect(queue.map((run) => run.status)).toEqual([
        'running',
        'running',
        'running',
        'pending',
        'pending',
        'pending',
      ]);

      const own = await startRun(ctx, ownTrivial, { n: 1 });
      expect(await waitForRun(ctx, own.run_id)).toMatchObject({ status: 'succeeded', output: { echo: { n: 1 } } });
      const statuses = async () =>
        Promise.all(
          queue.map(async (run) => (await ctx.call('GET', `/v1/runs/${run.run_id}`, { key: otherKey })).json().status),
        );
      expect(await statuses()).toEqual(['running', 'running', 'running', 'pending', 'pending', 'pending']);

      // One of its own slots frees: its oldest queued run takes it, and its share holds.
      await ctx.call('POST', `/v1/runs/${queue[0]?.run_id}/cancel`, { key: otherKey });
      await waitForRun(ctx, queue[3]?.run_id as string, ['running'], 20_000, otherKey);
      expect(await statuses()).toEqual(['canceled', 'running', 'running', 'running', 'pending', 'pending']);

      for (const run of queue.slice(1)) await ctx.call('POST', `/v1/runs/${run.run_id}/cancel`, { key: otherKey });
      for (const run of queue) await waitForRun(ctx, run.run_id, ['canceled'], 20_000, otherKey);
    });
  });

  describe('an explicit share', () => {
    let ctx: RunContext;
    let slow: string;

    beforeAll(async () => {
      ctx = await createRunContext({ MAX_CONCURRENT_RUNS: '4', MAX_RUNS_PER_ORGANIZATION: '1' });
      slow = (await deploy(ctx, crew('slow.mjs'))).deploymentId;
    });
    afterAll(() => ctx?.close());

    it('holds even an organization that is alone to it', async () => {
      const first = await startRun(ctx, slow);
      const second = await startRun(ctx, slow);
      expect([first.status, second.status]).toEqual(['running', 'pending']);
      await ctx.call('POST', `/v1/runs/${first.run_id}/cancel`);
      await waitForRun(ctx, second.run_id, ['running']);
      await ctx.call('POST', `/v1/runs/${second.run_id}/cancel`);
      expect((await waitForRun(ctx, second.run_id)).status).toBe('canceled');
    });
  });
});
