import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import {
  crew,
  deploy,
  explainPostgresOnly,
  runnerPid as findRunnerPid,
  getRun,
  type Instance,
  pidAlive,
  readStream,
  startInstance,
  startRun,
  until,
} from './helpers.js';

explainPostgresOnly(
  'notifications between instances',
  'with the embedded database one process holds every cache and every run',
);

/**
 * What instances tell each other through PostgreSQL notifications: changes to what they cache
 * (test/cache covers an instance that cannot hear them), queued runs and cancels. The lease is
 * long, so the supervisors' ticks (every 20 s) cannot be what acts within the tests' few seconds.
 */
describe.runIf(usingPostgres())('notifications between instances on one PostgreSQL', () => {
  let database: TestDatabase;
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = { INSTANCE_LEASE_SECONDS: '60', MAX_CONCURRENT_RUNS: '1' };
    // Two crewd processes: started side by side, with the time two starts take on a loaded machine.
    [a, b] = await Promise.all([
      startInstance('notify-a', database.url as string, env),
      startInstance('notify-b', database.url as string, env),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.destroy();
  });

  async function newKey(name: string): Promise<{ id: string; key: string }> {
    const created = await a.call('POST', '/v1/api-keys', { name });
    expect(created.status).toBe(201);
    return created.json();
  }

  const listRunsWith = async (instance: Instance, key: string) =>
    (await fetch(`${instance.baseUrl}/v1/runs?limit=1`, { headers: { authorization: `Bearer ${key}` } })).status;

  it('refuses on B, within moments, a key B has just served and A deletes', async () => {
    const { id, key } = await newKey('shared');
    expect(await listRunsWith(b, key)).toBe(200);
    expect(await listRunsWith(b, key)).toBe(200);
    expect((await a.call('DELETE', `/v1/api-keys/${id}`)).status).toBe(200);
    expect(await listRunsWith(a, key)).toBe(401);
    await until(async () => (await listRunsWith(b, key)) === 401, 2000);
  });

  it('shows on B that a finished run lost its thread when A deletes the thread', async () => {
    const deploymentId = await deploy(a, crew('trivial.mjs'));
    const thread = await (await a.call('POST', '/v1/threads', { deployment_id: deploymentId })).json();
    const run = await startRun(a, deploymentId, {}, { thread_id: thread.thread_id });
    const finished = await until(async () => {
      const seen = await getRun(b, run.run_id);
      return seen.status === 'succeeded' && seen;
    });
    expect(finished.thread_id).toBe(thread.thread_id);
    expect((await a.call('DELETE', `/v1/threads/${thread.thread_id}`)).status).toBe(200);
    await until(async () => (await getRun(b, run.run_id)).thread_id === null, 2000);
  });

  const runnerPid = (runId: string) => findRunnerPid(database.handle.db, runId, 5000);

  it('starts on B at once a run queued on A, and stops on A at once a run canceled on B', async () => {
    const deploymentId = await deploy(a, crew('slow.mjs'));
    // A's only slot frees once the last test's runner is gone: a run that had to queue meanwhile is let go.
    const first = await until(async () => {
      const run = await startRun(a, deploymentId, { interval_ms: 100 });
      if (run.status === 'running') return run;
      await a.call('POST', `/v1/runs/${run.run_id}/cancel`);
      return undefined;
    }, 5000);
    expect(first.status).toBe('running');
    const firstPid = await runnerPid(first.run_id);
    // A's only slot is taken: the next run queues, and B hears of it.
    const second = await startRun(a, deploymentId, { interval_ms: 100 });
    expect(second.status).toBe('pending');
    const secondPid = await runnerPid(second.run_id);
    expect((await getRun(b, second.run_id)).status).toBe('running');

    expect((await b.call('POST', `/v1/runs/${first.run_id}/cancel`)).status).toBe(200);
    await until(async () => !pidAlive(firstPid), 5000);
    expect((await a.call('POST', `/v1/runs/${second.run_id}/cancel`)).status).toBe(200);
    await until(async () => !pidAlive(secondPid), 5000);
  });

  it('follows on B, live to its end, a run of A, which started alone and heard B say hello', async () => {
    const deploymentId = await deploy(a, crew('timed-events.mjs'));
    const run = await startRun(a, deploymentId, { count: 10, interval_ms: 200, start_delay_ms: 300 });
    const url = `${b.baseUrl}/v1/runs/${run.run_id}/events`;
    const first = await readStream(url, (message) => message.data?.type === 'tick');
    expect(first.status).toBe(200);
    // Live, not replayed: had A not announced its events, B would have learnt of them only after
    // the run's end, at its quiet check (15 s).
    expect((await getRun(a, run.run_id)).status).toBe('running');
    const lastSeen = first.messages.findLast((message) => message.id !== undefined)?.id ?? '0';
    const rest = await readStream(`${url}?last_event_id=${lastSeen}`);
    const messages = [...first.messages, ...rest.messages];
    const ticks = messages.filter((message) => message.data?.type === 'tick');
    expect(ticks).toHaveLength(10);
    expect(messages.at(-1)?.data).toMatchObject({ type: 'complete', status: 'succeeded' });
  });
});
