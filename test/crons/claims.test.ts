import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crew, deploy, until } from '../runs/helpers.js';
import { createCron, createCronContext } from './helpers.js';

/*
 * Claims that lapse before their run starts: every due time is claimed again while its first
 * claimer still waits for it, so two firings race for it, the second finds or loses to the
 * first's run, and only the holder of the latest claim records it.
 */
describe('crons whose claims lapse before their runs start', () => {
  let ctx: Awaited<ReturnType<typeof createCronContext>>;

  beforeAll(async () => {
    ctx = await createCronContext({ leadMs: 300, claimMs: 100, maxWaitMs: 50 });
  });
  afterAll(async () => ctx?.close());

  it('still start exactly one run per due time, none missed', async () => {
    const { deploymentId } = await deploy(ctx, crew('trivial.mjs'));
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: '* * * * * *' });
    const dueTimes = async () =>
      (
        await ctx.database.handle.db
          .selectFrom('runs')
          .select('cron_due_at')
          .where('cron_id', '=', cron.id)
          .orderBy('cron_due_at')
          .execute()
      ).map((run) => (run.cron_due_at as Date).getTime());
    await until(async () => (await dueTimes()).length >= 4, 30_000);
    await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { enabled: false } });
    // Settled once the last claim is recorded or lapsed.
    await until(async () => {
      const row = await ctx.database.handle.db
        .selectFrom('crons')
        .select('claimed_until')
        .where('id', '=', cron.id)
        .executeTakeFirstOrThrow();
      return row.claimed_until === null || row.claimed_until.getTime() < Date.now();
    });

    const dues = await dueTimes();
    expect(new Set(dues).size).toBe(dues.length);
    expect(dues).toEqual(dues.map((_, index) => (dues[0] as number) + index * 1000));
    const current = (await ctx.call('GET', `/v1/crons/${cron.id}`)).json();
    expect(current.last_error).toBeNull();
  });
});
