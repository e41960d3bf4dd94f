import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext, startRun, until, waitForRun } from '../runs/helpers.js';
import { createCron, EVERY_SECOND_CRONS, getCron, runsOfCron } from './helpers.js';

const EVERY_SECOND = '* * * * * *';
// Comes once a year: in these tests a run of it starts only because a test moved its due time into the past.
const YEARLY = '0 0 1 1 *';

describe('cron scheduler', () => {
  let ctx: RunContext;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createRunContext(EVERY_SECOND_CRONS);
    ({ deploymentId } = await deploy(ctx, crew('trivial.mjs')));
  });
  afterAll(async () => ctx?.close());

  const db = () => ctx.database.handle.db;

  /** The due times the cron started runs for, as recorded on the runs, oldest first. */
  async function dueTimes(cronId: string): Promise<Array<{ due: string; runId: string }>> {
    const rows = await db()
      .selectFrom('runs')
      .select(['id', 'cron_due_at'])
      .where('cron_id', '=', cronId)
      .orderBy('cron_due_at')
      .execute();
    return rows.map((row) => ({ due: (row.cron_due_at as Date).toISOString(), runId: row.id }));
  }

  /** With the app stopped, sets columns of a cron as an outage or a crash would have left them. */
  async function whileDown(change: () => Promise<unknown>): Promise<void> {
    await ctx.app.close();
    await change();
    await ctx.restart();
  }

  it('starts one run per due time, each with cron_id, and GET /v1/runs?cron_id= finds them', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: EVERY_SECOND, input: { n: 1 } });
    await until(async () => (await runsOfCron(ctx, cron.id)).length >= 3);
    const disabled = await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { enabled: false } });
    expect(disabled.json().next_run_at).toBeNull();
    const plain = await startRun(ctx, deploymentId, { plain: true });

    // Settled: every firing claimed before the PATCH has been recorded.
    const settled = await until(async () => {
      const current = await getCron(ctx, cron.id);
      const runs = await runsOfCron(ctx, cron.id);
      return runs[0]?.id === current.last_run_id ? { current, runs } : null;
    });
    const { current, runs } = settled;
    const dues = await dueTimes(cron.id);
    expect(new Set(runs.map((run) => run.id))).toEqual(new Set(dues.map((due) => due.runId)));
    // Every second from the first to the last, one run each, none before its time.
    const seconds = dues.map(({ due }) => new Date(due).getTime());
    expect(seconds).toEqual(seconds.map((_, index) => (seconds[0] as number) + index * 1000));
    for (const { due, runId } of dues) {
      expect(due).toMatch(/\.000Z$/);
      const run = runs.find((candidate) => candidate.id === runId) as { created_at: string };
      expect(new Date(run.created_at).getTime()).toBeGreaterThanOrEqual(new Date(due).getTime());
    }
    for (const run of runs) {
      expect(run).toMatchObject({ cron_id: cron.id, deployment_id: deploymentId, input: { n: 1 }, thread_id: null });
    }
    expect(current).toMatchObject({ last_error: null, enabled: false });
    expect(current.last_run_at).not.toBeNull();
    expect(runs.map((run) => run.id)).not.toContain(plain.run_id);
    expect((await ctx.call('GET', `/v1/runs/${plain.run_id}`)).json().cron_id).toBeNull();

    // A deleted cron's runs stay, still naming it.
    expect((await ctx.call('DELETE', `/v1/crons/${cron.id}`)).statusCode).toBe(200);
    const kept = await ctx.call('GET', `/v1/runs/${runs[0]?.id}`);
    expect(kept.statusCode).toBe(200);
    expect(kept.json().cron_id).toBe(cron.id);
    expect((await runsOfCron(ctx, cron.id)).length).toBe(runs.length);
  });

  it('records a missing running version as last_error and starts the run at a next time once there is one', async () => {
    const created = await ctx.call('POST', '/v1/deployments', { body: { name: 'not-yet' } });
    const pendingDeployment = created.json().id as string;
    const cron = await createCron(ctx, { deployment_id: pendingDeployment, schedule: EVERY_SECOND });
    const failed = await until(async () => {
      const current = await getCron(ctx, cron.id);
      return current.last_error ? current : null;
    });
    expect(failed.last_error).toBe('No running version found for production environment');
    expect(failed.last_run_id).toBeNull();
    expect(await runsOfCron(ctx, cron.id)).toEqual([]);

    const version = await ctx.call('POST', `/v1/deployments/${pendingDeployment}/versions`, {
      body: { command: crew('trivial.mjs'), environment: 'production' },
    });
    expect(version.statusCode).toBe(201);
    const recovered = await until(async () => {
      const current = await getCron(ctx, cron.id);
      return current.last_run_id && current.last_error === null ? current : null;
    });
    await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { enabled: false } });
    const run = await waitForRun(ctx, recovered.last_run_id);
    expect(run).toMatchObject({ cron_id: cron.id, status: 'succeeded' });
  });

  it('starts one run for all the times missed while no instance ran', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: '* * * * *' });
    const missedSince = new Date(Math.floor((Date.now() - 10 * 60_000) / 60_000) * 60_000);
    await whileDown(() =>
      db().updateTable('crons').set({ next_run_at: missedSince }).where('id', '=', cron.id).execute(),
    );
    const restartedAt = Date.now();
    const fired = await until(async () => {
      const current = await getCron(ctx, cron.id);
      return current.last_run_id ? current : null;
    });
    await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { enabled: false } });
    expect(new Date(fired.next_run_at).getTime()).toBeGreaterThan(restartedAt);
    // Ten missed minutes: one run, for the first of them; any other run is for a minute after the restart.
    const dues = await dueTimes(cron.id);
    const backlog = dues.filter(({ due }) => new Date(due).getTime() < restartedAt);
    expect(backlog).toEqual([{ due: missedSince.toISOString(), runId: fired.last_run_id }]);
  });

  it('starts a run for each time only a few seconds late', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: EVERY_SECOND, enabled: false });
    const lateSince = new Date(Math.floor(Date.now() / 1000) * 1000 - 3000);
    await whileDown(() =>
      db().updateTable('crons').set({ enabled: true, next_run_at: lateSince }).where('id', '=', cron.id).execute(),
    );
    const caughtUp = lateSince.getTime() + 4000;
    await until(async () => (await dueTimes(cron.id)).some(({ due }) => new Date(due).getTime() >= caughtUp));
    await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { enabled: false } });
    const dues = (await dueTimes(cron.id)).map(({ due }) => new Date(due).getTime());
    expect(dues.slice(0, 5)).toEqual([0, 1, 2, 3, 4].map((second) => lateSince.getTime() + second * 1000));
  });

  it('takes again a due time whose claim lapsed, without starting its run twice', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY });
    const due = new Date(Date.now() - 5 * 60_000);
    await whileDown(() => db().updateTable('crons').set({ next_run_at: due }).where('id', '=', cron.id).execute());
    const first = await until(async () => {
      const current = await getCron(ctx, cron.id);
      return current.last_run_id ? current : null;
    });
    expect(first.next_run_at).toBe(cron.next_run_at);

    // An instance that started the run and died before recording it leaves the due time claimed; the claim lapses.
    await whileDown(() =>
      db()
        .updateTable('crons')
        .set({ next_run_at: due, claimed_until: new Date(Date.now() - 1000), last_run_id: null })
        .where('id', '=', cron.id)
        .execute(),
    );
    const again = await until(async () => {
      const current = await getCron(ctx, cron.id);
      return current.last_run_id ? current : null;
    });
    expect(again.last_run_id).toBe(first.last_run_id);
    expect(again.next_run_at).toBe(cron.next_run_at);
    expect((await runsOfCron(ctx, cron.id)).map((run) => run.id)).toEqual([first.last_run_id]);
  });

  it('leaves a due time alone while another instance’s claim holds, and takes it once the claim lapsed', async () => {
    const held = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY });
    const free = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY });
    const due = new Date(Date.now() - 60_000);
    await whileDown(async () => {
      await db().updateTable('crons').set({ next_run_at: due }).where('id', 'in', [held.id, free.id]).execute();
      await db()
        .updateTable('crons')
        .set({ claimed_until: new Date(Date.now() + 3_600_000) })
        .where('id', '=', held.id)
        .execute();
      // Its instance died before it started the run.
      await db()
        .updateTable('crons')
        .set({ claimed_until: new Date(Date.now() - 1000) })
        .where('id', '=', free.id)
        .execute();
    });
    const freeRun = await until(async () => (await getCron(ctx, free.id)).last_run_id);
    expect(await dueTimes(free.id)).toEqual([{ due: due.toISOString(), runId: freeRun }]);
    // The look that started the free cron's run passed the held one by.
    const stillHeld = await getCron(ctx, held.id);
    expect(stillHeld).toMatchObject({ last_run_id: null, next_run_at: due.toISOString() });
    expect(await runsOfCron(ctx, held.id)).toEqual([]);
    await ctx.call('DELETE', `/v1/crons/${held.id}`);
  });
});

describe('crons on a thread', () => {
  let ctx: RunContext;

  beforeAll(async () => {
    ctx = await createRunContext(EVERY_SECOND_CRONS);
  });
  afterAll(async () => ctx?.close());

  it('with reject, starts each run in the thread; a busy thread is recorded as last_error until it is free', async () => {
    const { deploymentId } = await deploy(ctx, crew('slow.mjs'));
    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();
    const threadId = thread.thread_id as string;
    const busy = await ctx.call('POST', `/v1/threads/${threadId}/runs`, { body: { input: {} } });
    expect(busy.statusCode).toBe(202);
    const busyRun = busy.json().run_id as string;

    const cron = await createCron(ctx, {
      deployment_id: deploymentId,
      schedule: EVERY_SECOND,
      thread_id: threadId,
      input: { ticks: 1, interval_ms: 1 },
      multitask_strategy: 'reject',
    });
    expect(cron.multitask_strategy).toBe('reject');
    const blocked = await until(async () => {
      const current = await getCron(ctx, cron.id);
      return current.last_error ? current : null;
    });
    expect(blocked.last_error).toBe(`Thread ${threadId} is busy with run ${busyRun}`);
    expect(await runsOfCron(ctx, cron.id)).toEqual([]);

    expect((await ctx.call('POST', `/v1/runs/${busyRun}/cancel`)).statusCode).toBe(200);
    const started = await until(async () => {
      const current = await getCron(ctx, cron.id);
      return current.last_run_id ? current : null;
    });
    await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { enabled: false } });
    const run = await waitForRun(ctx, started.last_run_id);
    expect(run).toMatchObject({ cron_id: cron.id, thread_id: threadId, status: 'succeeded', output: { ticks: 1 } });
  });

  it('with enqueue (the default), queues its runs behind a busy thread and runs them once it is free', async () => {
    const { deploymentId } = await deploy(ctx, crew('slow.mjs'));
    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();
    const threadId = thread.thread_id as string;
    const busy = await ctx.call('POST', `/v1/threads/${threadId}/runs`, { body: { input: {} } });
    const busyRun = busy.json().run_id as string;
    const cron = await createCron(ctx, {
      deployment_id: deploymentId,
      schedule: EVERY_SECOND,
      thread_id: threadId,
      input: { ticks: 1, interval_ms: 1 },
    });
    expect(cron.multitask_strategy).toBe('enqueue');
    const queued = await until(async () => (await runsOfCron(ctx, cron.id))[0]);
    expect(queued).toMatchObject({ status: 'pending', thread_id: threadId });
    await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { enabled: false } });
    expect((await ctx.call('POST', `/v1/runs/${busyRun}/cancel`)).statusCode).toBe(200);
    const run = await waitForRun(ctx, queued.id as string);
    expect(run).toMatchObject({ cron_id: cron.id, status: 'succeeded', output: { ticks: 1 } });
    expect((await getCron(ctx, cron.id)).last_error).toBeNull();
  });
});
