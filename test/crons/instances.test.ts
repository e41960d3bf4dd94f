import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { crew, deploy, explainPostgresOnly, type Instance, startInstance, until } from '../scale/helpers.js';
import { EVERY_SECOND_CRONS } from './helpers.js';

explainPostgresOnly(
  'crons on several instances',
  'embedded PGlite is one process by design, so there is no second instance',
);

describe.runIf(usingPostgres())('crons on two instances of one PostgreSQL', () => {
  let database: TestDatabase;
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    database = await createTestDatabase();
    const url = database.url as string;
    [a, b] = await Promise.all([
      startInstance('cron-a', url, EVERY_SECOND_CRONS),
      startInstance('cron-b', url, EVERY_SECOND_CRONS),
    ]);
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.destroy();
  });

  const runsOf = (cronId: string) =>
    database.handle.db
      .selectFrom('runs')
      .select(['id', 'cron_due_at', 'instance_id'])
      .where('cron_id', '=', cronId)
      .orderBy('cron_due_at')
      .execute();

  it('a one-second cron over fifteen due times starts exactly one run per due time', { timeout: 60_000 }, async () => {
    const deploymentId = await deploy(a, crew('trivial.mjs'));
    // Created through B: A learns of it through the instances' notification.
    const created = await b.call('POST', '/v1/crons', { deployment_id: deploymentId, schedule: '* * * * * *' });
    expect(created.status).toBe(201);
    const cronId = (await created.json()).id as string;
    const db = database.handle.db;

    await until(async () => (await runsOf(cronId)).length >= 15, 40_000);
    expect((await a.call('PATCH', `/v1/crons/${cronId}`, { enabled: false })).status).toBe(200);
    // Settled once no instance holds a claim on it any more.
    await until(async () => {
      const row = await db.selectFrom('crons').select('claimed_until').where('id', '=', cronId).executeTakeFirst();
      return row?.claimed_until === null;
    });

    const runs = await runsOf(cronId);
    const dues = runs.map((run) => (run.cron_due_at as Date).getTime());

    expect(dues.length).toBeGreaterThanOrEqual(15);
    // One run per due time (none doubled), and the due times are every second from the first to the last (none missed).
    expect(new Set(dues).size).toBe(runs.length);
    expect(dues.slice(1).map((due, index) => due - (dues[index] as number))).toEqual(
      Array.from({ length: dues.length - 1 }, () => 1000),
    );
  });

  it('keeps one run per due time, none missed, when an instance is killed', { timeout: 60_000 }, async () => {
    const deploymentId = await deploy(a, crew('trivial.mjs'));
    const created = await a.call('POST', '/v1/crons', { deployment_id: deploymentId, schedule: '* * * * * *' });
    const cronId = (await created.json()).id as string;
    const db = database.handle.db;
    const dueTimes = async () =>
      (
        await db.selectFrom('runs').select('cron_due_at').where('cron_id', '=', cronId).orderBy('cron_due_at').execute()
      ).map((run) => (run.cron_due_at as Date).getTime());
    await until(async () => (await dueTimes()).length >= 3);

    // kill -9 while a due time is claimed (by either instance): if B held it, A takes the due time over.
    await until(async () => {
      const row = await db.selectFrom('crons').select('claimed_until').where('id', '=', cronId).executeTakeFirst();
      return row?.claimed_until != null;
    });
    await b.kill();
    const killedAt = Date.now();
    await until(async () => (await dueTimes()).some((due) => due > killedAt + 8000), 30_000);
    expect((await a.call('PATCH', `/v1/crons/${cronId}`, { enabled: false })).status).toBe(200);

    const dues = await dueTimes();
    expect(new Set(dues).size).toBe(dues.length);
    expect(dues).toEqual(dues.map((_, index) => (dues[0] as number) + index * 1000));
  });
});
