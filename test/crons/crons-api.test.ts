import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext } from '../runs/helpers.js';
import { createCron, errorOf, getCron } from './helpers.js';

describe('crons API', () => {
  let ctx: RunContext;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createRunContext();
    ({ deploymentId } = await deploy(ctx, crew('trivial.mjs')));
  });
  afterAll(async () => ctx?.close());

  // A time that comes once a year, so no run starts while these tests look at the cron.
  const YEARLY = '0 0 1 1 *';

  it('creates a cron with the contract defaults', async () => {
    const before = Date.now();
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY });
    expect(cron).toMatchObject({
      deployment_id: deploymentId,
      schedule: YEARLY,
      timezone: 'UTC',
      input: {},
      environment: 'production',
      thread_id: null,
      multitask_strategy: 'enqueue',
      enabled: true,
      last_run_at: null,
      last_run_id: null,
      last_error: null,
    });
    expect(cron.id).toMatch(/^cron_[0-9a-z]{24}$/);
    const next = new Date(cron.next_run_at);
    expect(next.getTime()).toBeGreaterThan(before);
    expect(next.toISOString()).toMatch(/^\d{4}-01-01T00:00:00\.000Z$/);
    expect(await getCron(ctx, cron.id)).toEqual(cron);
  });

  it('reads the schedule in the given time zone', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: '30 9 * * *', timezone: 'Asia/Tokyo' });
    // 09:30 in Tokyo (UTC+9, no daylight saving) is 00:30 UTC.
    expect(cron.next_run_at).toMatch(/T00:30:00\.000Z$/);
    expect(cron.timezone).toBe('Asia/Tokyo');
  });

  it('takes 6 fields with seconds first', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: '15 0 0 1 1 *', enabled: false });
    expect(cron.schedule).toBe('15 0 0 1 1 *');
    expect(cron.next_run_at).toBeNull();
  });

  it.each([
    ['not a schedule', 'schedule'],
    ['* * * *', 'schedule'],
    ['0 0 0 1 1 * 2030', 'schedule'],
    ['61 * * * *', 'schedule'],
  ])('refuses the schedule %j naming the field', async (schedule, field) => {
    const response = await ctx.call('POST', '/v1/crons', { body: { deployment_id: deploymentId, schedule } });
    expect(response.statusCode).toBe(400);
    expect(errorOf(response)).toMatchObject({ code: 'bad_request' });
    expect(errorOf(response).message).toMatch(new RegExp(`^${field}: `));
  });

  it('refuses a schedule that never falls due', async () => {
    const response = await ctx.call('POST', '/v1/crons', {
      body: { deployment_id: deploymentId, schedule: '0 0 30 2 *' },
    });
    expect(response.statusCode).toBe(400);
    expect(errorOf(response).message).toBe('schedule: "0 0 30 2 *" never falls due');
  });

  it('refuses an unknown time zone naming the field', async () => {
    const response = await ctx.call('POST', '/v1/crons', {
      body: { deployment_id: deploymentId, schedule: YEARLY, timezone: 'Mars/Olympus_Mons' },
    });
    expect(response.statusCode).toBe(400);
    expect(errorOf(response).message).toMatch(/^timezone: must be an IANA time zone/);
  });

  it('requires deployment_id and schedule', async () => {
    const missing = await ctx.call('POST', '/v1/crons', { body: { schedule: YEARLY } });
    expect(missing.statusCode).toBe(400);
    expect(errorOf(missing).message).toBe('deployment_id is required');
    const noSchedule = await ctx.call('POST', '/v1/crons', { body: { deployment_id: deploymentId } });
    expect(noSchedule.statusCode).toBe(400);
    expect(errorOf(noSchedule).message).toBe('schedule is required');
  });

  it('refuses an unknown deployment and an unknown strategy', async () => {
    const unknown = await ctx.call('POST', '/v1/crons', { body: { deployment_id: 'dep_nope', schedule: YEARLY } });
    expect(unknown.statusCode).toBe(404);
    expect(errorOf(unknown)).toEqual({ code: 'not_found', message: 'Deployment not found' });
    const strategy = await ctx.call('POST', '/v1/crons', {
      body: { deployment_id: deploymentId, schedule: YEARLY, multitask_strategy: 'whenever' },
    });
    expect(strategy.statusCode).toBe(400);
    expect(errorOf(strategy).message).toMatch(/^multitask_strategy: /);
  });

  it('checks the thread: known, and of the same deployment', async () => {
    const unknown = await ctx.call('POST', '/v1/crons', {
      body: { deployment_id: deploymentId, schedule: YEARLY, thread_id: 'thr_nope' },
    });
    expect(unknown.statusCode).toBe(404);
    expect(errorOf(unknown).message).toBe('Thread not found');

    const other = await deploy(ctx, crew('trivial.mjs'));
    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: other.deploymentId } })).json();
    const mismatch = await ctx.call('POST', '/v1/crons', {
      body: { deployment_id: deploymentId, schedule: YEARLY, thread_id: thread.thread_id },
    });
    expect(mismatch.statusCode).toBe(400);
    expect(errorOf(mismatch).message).toBe(
      `thread_id: thread ${thread.thread_id} belongs to deployment ${other.deploymentId}`,
    );

    const cron = await createCron(ctx, {
      deployment_id: other.deploymentId,
      schedule: YEARLY,
      thread_id: thread.thread_id,
      multitask_strategy: 'reject',
    });
    expect(cron).toMatchObject({ thread_id: thread.thread_id, multitask_strategy: 'reject' });
  });

  it('deletes the crons of a deleted thread', async () => {
    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY, thread_id: thread.thread_id });
    expect((await ctx.call('DELETE', `/v1/threads/${thread.thread_id}`)).statusCode).toBe(200);
    expect((await ctx.call('GET', `/v1/crons/${cron.id}`)).statusCode).toBe(404);
  });

  it('lists crons newest first, by deployment, with limit and offset', async () => {
    const { deploymentId: own } = await deploy(ctx, crew('trivial.mjs'));
    const first = await createCron(ctx, { deployment_id: own, schedule: YEARLY, input: { n: 1 } });
    const second = await createCron(ctx, { deployment_id: own, schedule: YEARLY, input: { n: 2 } });
    const listed = await ctx.call('GET', `/v1/crons?deployment_id=${own}`);
    expect(listed.statusCode).toBe(200);
    expect(listed.json().crons.map((cron: { id: string }) => cron.id)).toEqual([second.id, first.id]);
    const paged = await ctx.call('GET', `/v1/crons?deployment_id=${own}&limit=1&offset=1`);
    expect(paged.json().crons).toEqual([first]);
    const all = await ctx.call('GET', '/v1/crons?limit=1000');
    expect(all.json().crons.map((cron: { id: string }) => cron.id)).toEqual(expect.arrayContaining([first.id]));
    const unknown = await ctx.call('GET', '/v1/crons?deployment_id=dep_nope');
    expect(unknown.statusCode).toBe(404);
    const bad = await ctx.call('GET', '/v1/crons?limit=-1');
    expect(bad.statusCode).toBe(400);
    expect(errorOf(bad).message).toMatch(/^limit: /);
  });

  it('changes any field but the deployment', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY });
    const input = await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { input: { topic: 'news' } } });
    expect(input.statusCode).toBe(200);
    expect(input.json()).toMatchObject({ input: { topic: 'news' }, next_run_at: cron.next_run_at });
    expect(new Date(input.json().updated_at).getTime()).toBeGreaterThanOrEqual(new Date(cron.updated_at).getTime());

    const moved = await ctx.call('PATCH', `/v1/crons/${cron.id}`, {
      body: { schedule: '0 12 * * *', timezone: 'America/New_York', environment: 'staging' },
    });
    expect(moved.statusCode).toBe(200);
    expect(moved.json()).toMatchObject({
      schedule: '0 12 * * *',
      timezone: 'America/New_York',
      environment: 'staging',
    });
    // Noon in New York is 16:00 or 17:00 UTC, depending on daylight saving.
    expect(moved.json().next_run_at).toMatch(/T1[67]:00:00\.000Z$/);

    const disabled = await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { enabled: false } });
    expect(disabled.json()).toMatchObject({ enabled: false, next_run_at: null });
    const enabled = await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { enabled: true } });
    expect(enabled.json()).toMatchObject({ enabled: true, next_run_at: moved.json().next_run_at });

    const strategy = await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { multitask_strategy: 'interrupt' } });
    expect(strategy.json().multitask_strategy).toBe('interrupt');
  });

  it('refuses a change of deployment or a bad value, and changes nothing then', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY });
    const deployment = await ctx.call('PATCH', `/v1/crons/${cron.id}`, {
      body: { deployment_id: 'dep_other', input: { a: 1 } },
    });
    expect(deployment.statusCode).toBe(400);
    expect(errorOf(deployment).message).toBe(
      'deployment_id: cannot be changed; create a new cron for the other deployment',
    );
    const schedule = await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { schedule: 'often', input: { a: 1 } } });
    expect(schedule.statusCode).toBe(400);
    expect(errorOf(schedule).message).toMatch(/^schedule: /);
    const thread = await ctx.call('PATCH', `/v1/crons/${cron.id}`, {
      body: { thread_id: 'thr_nope', input: { a: 1 } },
    });
    expect(thread.statusCode).toBe(404);
    expect(await getCron(ctx, cron.id)).toEqual(cron);
  });

  it('deletes a cron', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY });
    const deleted = await ctx.call('DELETE', `/v1/crons/${cron.id}`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ success: true });
    const gone = await ctx.call('GET', `/v1/crons/${cron.id}`);
    expect(gone.statusCode).toBe(404);
    expect(errorOf(gone)).toEqual({ code: 'not_found', message: 'Cron not found' });
    expect((await ctx.call('DELETE', `/v1/crons/${cron.id}`)).statusCode).toBe(404);
  });

  it('lets a member key manage crons', async () => {
    const created = await ctx.call('POST', '/v1/api-keys', { body: { name: 'cron-member', role: 'member' } });
    const member = created.json().key as string;
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY }, { key: member });
    const read = await ctx.call('GET', `/v1/crons/${cron.id}`, { key: member });
    expect(read.statusCode).toBe(200);
    const patched = await ctx.call('PATCH', `/v1/crons/${cron.id}`, { key: member, body: { enabled: false } });
    expect(patched.statusCode).toBe(200);
    expect((await ctx.call('DELETE', `/v1/crons/${cron.id}`, { key: member })).statusCode).toBe(200);
  });

  it('hides another organization’s crons as if absent', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY });
    const org = await ctx.call('POST', '/v1/organizations', { body: { name: 'cron-other' } });
    const otherKey = org.json().api_key.key as string;
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { enabled: false }],
      ['DELETE', undefined],
    ] as const) {
      const response = await ctx.call(method, `/v1/crons/${cron.id}`, { key: otherKey, body });
      expect(response.statusCode).toBe(404);
      expect(errorOf(response).message).toBe('Cron not found');
    }
    const list = await ctx.call('GET', '/v1/crons', { key: otherKey });
    expect(list.json().crons).toEqual([]);
    const foreign = await ctx.call('POST', '/v1/crons', {
      key: otherKey,
      body: { deployment_id: deploymentId, schedule: YEARLY },
    });
    expect(foreign.statusCode).toBe(404);
    expect(errorOf(foreign).message).toBe('Deployment not found');
    expect(await getCron(ctx, cron.id)).toEqual(cron);
  });

  it('needs a key', async () => {
    const response = await ctx.call('GET', '/v1/crons', { key: null });
    expect(response.statusCode).toBe(401);
  });
});
