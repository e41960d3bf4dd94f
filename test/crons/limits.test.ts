import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext } from '../runs/helpers.js';
import { createCron, errorOf } from './helpers.js';

/** CRON_MIN_INTERVAL_SECONDS and MAX_CRONS_PER_ORGANIZATION (CONTRACTS §12 "Limits"). */
describe('cron limits', () => {
  let ctx: RunContext;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createRunContext({ MAX_CRONS_PER_ORGANIZATION: '2' });
    ({ deploymentId } = await deploy(ctx, crew('trivial.mjs')));
  });
  afterAll(async () => ctx?.close());

  const YEARLY = '0 0 1 1 *';

  it.each([
    ['* * * * * *', 1],
    ['*/30 * * * * *', 30],
    // At seconds 0 and 30 of each hour's first minute: the shortest interval counts, not the average.
    ['0,30 0 * * * *', 30],
  ])('refuses %j, more often than the default CRON_MIN_INTERVAL_SECONDS (60)', async (schedule, seconds) => {
    const response = await ctx.call('POST', '/v1/crons', { body: { deployment_id: deploymentId, schedule } });
    expect(response.statusCode).toBe(422);
    expect(errorOf(response)).toEqual({
      code: 'limit_exceeded',
      message: `schedule: "${schedule}" falls due every ${seconds} s, more often than CRON_MIN_INTERVAL_SECONDS (60 s) allows`,
    });
  });

  it('takes a schedule due every minute', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: '* * * * *', enabled: false });
    await ctx.call('DELETE', `/v1/crons/${cron.id}`);
  });

  it('refuses a change to a schedule that is too frequent, and keeps the old one', async () => {
    const cron = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY });
    const response = await ctx.call('PATCH', `/v1/crons/${cron.id}`, { body: { schedule: '*/5 * * * * *' } });
    expect(response.statusCode).toBe(422);
    expect(errorOf(response).message).toContain('CRON_MIN_INTERVAL_SECONDS');
    expect((await ctx.call('GET', `/v1/crons/${cron.id}`)).json().schedule).toBe(YEARLY);
    await ctx.call('DELETE', `/v1/crons/${cron.id}`);
  });

  it("refuses an organization's cron beyond MAX_CRONS_PER_ORGANIZATION, not another organization's", async () => {
    const first = await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY });
    await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY, enabled: false });
    const third = await ctx.call('POST', '/v1/crons', { body: { deployment_id: deploymentId, schedule: YEARLY } });
    expect(third.statusCode).toBe(422);
    expect(errorOf(third)).toEqual({
      code: 'limit_exceeded',
      message: 'The organization has 2 crons, as many as MAX_CRONS_PER_ORGANIZATION allows: delete one first',
    });

    const other = (await ctx.call('POST', '/v1/organizations', { body: { name: 'other' } })).json().api_key.key;
    const otherDeployment = (await deploy(ctx, crew('trivial.mjs'), { key: other })).deploymentId;
    await createCron(ctx, { deployment_id: otherDeployment, schedule: YEARLY }, { key: other });

    await ctx.call('DELETE', `/v1/crons/${first.id}`);
    await createCron(ctx, { deployment_id: deploymentId, schedule: YEARLY });
  });
});
