import type { CronTimings } from '../../src/crons/scheduler.js';
import { type CallOptions, startTestApp } from '../helpers/app.js';
import { FAST_TIMINGS, type RunContext } from '../runs/helpers.js';

type Caller = Pick<RunContext, 'call'>;

/** Creates a cron and returns it; fails the test with the answer when it is not a 201. */
export async function createCron(ctx: Caller, body: Record<string, unknown>, options: CallOptions = {}) {
  const response = await ctx.call('POST', '/v1/crons', { ...options, body });
  if (response.statusCode !== 201) throw new Error(`cron: ${response.statusCode} ${response.body}`);
  return response.json();
}

export async function getCron(ctx: Caller, id: string) {
  const response = await ctx.call('GET', `/v1/crons/${id}`);
  if (response.statusCode !== 200) throw new Error(`cron: ${response.statusCode} ${response.body}`);
  return response.json();
}

/** The runs a cron started, newest first. */
export async function runsOfCron(ctx: Caller, cronId: string): Promise<Array<Record<string, unknown>>> {
  const response = await ctx.call('GET', `/v1/runs?cron_id=${cronId}&limit=1000`);
  if (response.statusCode !== 200) throw new Error(`runs: ${response.statusCode} ${response.body}`);
  return response.json().runs;
}

export const errorOf = (response: { json(): unknown }) =>
  (response.json() as { error: { message: string; code: string } }).error;

/** Tests use crons due every second, which CRON_MIN_INTERVAL_SECONDS must allow. */
export const EVERY_SECOND_CRONS = { CRON_MIN_INTERVAL_SECONDS: '1' };

/** The app on a fresh database with the scheduler's timings changed. */
export const createCronContext = (cronTimings: Partial<CronTimings>) =>
  startTestApp({ env: EVERY_SECOND_CRONS, timings: FAST_TIMINGS, cronTimings });
