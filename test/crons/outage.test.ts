import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { crew, deploy, explainPostgresOnly, type Instance, startInstance, until } from '../scale/helpers.js';
import { EVERY_SECOND_CRONS } from './helpers.js';

explainPostgresOnly('crons through a database outage', 'the embedded PGlite lives inside the process');

describe.runIf(usingPostgres())('crons through a PostgreSQL outage', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let instance: Instance;

  beforeAll(async () => {
    database = await createTestDatabase();
    const target = new URL(database.url as string);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    instance = await startInstance('cron-outage', proxy.via(database.url as string), EVERY_SECOND_CRONS);
  });

  afterAll(async () => {
    proxy?.restore();
    await instance?.stop();
    await proxy?.close();
    await database?.destroy();
  });

  const dueTimes = async (cronId: string) =>
    (
      await database.handle.db
        .selectFrom('runs')
        .select('cron_due_at')
        .where('cron_id', '=', cronId)
        .orderBy('cron_due_at')
        .execute()
    ).map((run) => (run.cron_due_at as Date).getTime());

  it('starts the runs of the due times a few seconds of outage delayed, each once, once it is back', {
    timeout: 60_000,
  }, async () => {
    const deploymentId = await deploy(instance, crew('trivial.mjs'));
    const created = await instance.call('POST', '/v1/crons', { deployment_id: deploymentId, schedule: '* * * * * *' });
    expect(created.status).toBe(201);
    const cronId = (await created.json()).id as string;
    await until(async () => (await dueTimes(cronId)).length >= 2);

    const failures = () => instance.server.output().split('crons: a look failed; trying again').length - 1;
    proxy.cut();
    const cutAt = Date.now();
    // The outage lasts until the scheduler has seen it and two of the cron's due times (whole seconds) have come in it.
    const secondDueInOutage = (Math.floor(cutAt / 1000) + 2) * 1000;
    await until(async () => failures() === 1 && Date.now() > secondDueInOutage, 15_000);
    proxy.restore();
    const restoredAt = Date.now();
    await until(async () => (await dueTimes(cronId)).some((due) => due > restoredAt + 1000));
    expect((await instance.call('PATCH', `/v1/crons/${cronId}`, { enabled: false })).status).toBe(200);

    const dues = await dueTimes(cronId);
    // Every second from the first to the last, the ones of the outage included, each with one run.
    expect(dues).toEqual(dues.map((_, index) => (dues[0] as number) + index * 1000));
    expect(dues.filter((due) => due > cutAt && due < restoredAt).length).toBeGreaterThanOrEqual(2);
    // The outage is one line in the log, not one per look, and so is the end of it.
    expect(failures()).toBe(1);
    expect(instance.server.output().split('crons: working again').length - 1).toBe(1);
  });
});
