import type { InjectOptions } from 'fastify';
import { bootstrapDefaultOrganization } from '../../src/access/bootstrap.js';
import { buildApp } from '../../src/app.js';
import type { CronTimings } from '../../src/crons/scheduler.js';
import { createLogger } from '../../src/logger.js';
import { ADMIN_KEY, type CallOptions } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/database.js';
import { configFor, FAST_TIMINGS, type RunContext } from '../runs/helpers.js';

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

/** The app on a fresh database with the scheduler's timings changed; `call` as in the other helpers. */
export async function createCronContext(cronTimings: Partial<CronTimings>) {
  const config = configFor();
  const database = await createTestDatabase();
  await bootstrapDefaultOrganization(database.handle.db, config.bootstrapApiKey);
  const app = await buildApp({
    config,
    database: database.handle,
    logger: createLogger(config.logLevel),
    timings: FAST_TIMINGS,
    cronTimings,
  });
  await app.ready();
  return {
    app,
    database,
    call(method: InjectOptions['method'], url: string, options: CallOptions = {}) {
      const headers: Record<string, string> = { authorization: `Bearer ${options.key ?? ADMIN_KEY}` };
      return app.inject({
        method,
        url,
        headers,
        ...(options.body === undefined ? {} : { payload: options.body as object }),
      });
    },
    async close() {
      await app.close();
      await database.destroy();
    },
  };
}
