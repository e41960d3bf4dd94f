import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOST_RUN_ERROR } from '../../src/execution/instance-lease.js';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { type Receiver, startReceiver } from '../webhooks/helpers.js';
import {
  crew,
  deploy,
  explainPostgresOnly,
  runnerPid as findRunnerPid,
  getRun,
  type Instance,
  pidAlive,
  readStream,
  type SseMessage,
  startInstance,
  startRun,
  until,
} from './helpers.js';

explainPostgresOnly(
  'several instances',
  'embedded PGlite is one process by design, so there is no second instance to start',
);

describe.runIf(usingPostgres())('several instances on one PostgreSQL', () => {
  let database: TestDatabase;
  let a: Instance;
  let b: Instance;
  let receiver: Receiver;
  const strays: number[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    const url = database.url as string;
    // One slot each, so a second run must go to the other instance.
    [a, b] = await Promise.all([
      startInstance('a', url, { MAX_CONCURRENT_RUNS: '1' }),
      startInstance('b', url, { MAX_CONCURRENT_RUNS: '1' }),
    ]);
    receiver = await startReceiver();
  }, 120_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    for (const pid of strays) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await receiver?.close();
    await database?.destroy();
  });

  const instanceOf = async (runId: string) =>
    (
      await database.handle.db
        .selectFrom('runs')
        .select('instance_id')
        .where('id', '=', runId)
        .executeTakeFirstOrThrow()
    ).instance_id;

  const runnerPid = (runId: string) => findRunnerPid(database.handle.db, runId);

  it('streams a run started on A live from B, every event in order', async () => {
    const deploymentId = await deploy(a, crew('timed-events.mjs'));
    const run = await startRun(a, deploymentId, { count: 40, interval_ms: 40, start_delay_ms: 500 });
    expect(run.status).toBe('running');
    const { status, messages } = await readStream(`${b.baseUrl}/v1/runs/${run.run_id}/events`);
    expect(status).toBe(200);
    expect(await instanceOf(run.run_id)).not.toBeNull();

    const events = messages.filter((message) => message.id !== undefined);
    expect(events.map((message) => Number(message.id))).toEqual(events.map((_, index) => index + 1));
    const types = events.map((message) => message.data?.type);
    expect(types[0]).toBe('run.started');
    expect(types.at(-1)).toBe('run.completed');
    const ticks = events.filter((message) => message.data?.type === 'tick');
    expect(ticks.map((message) => (message.data as { data: { i: number } }).data.i)).toEqual(
      Array.from({ length: 40 }, (_, index) => index + 1),
    );
    // Live through the feed: the fallback poll would have sent heartbeats.
    const untracked = messages.filter((message) => message.id === undefined && message.data);
    expect(untracked.map((message) => message.data?.type)).toEqual(['complete']);
    expect(untracked[0]?.data).toMatchObject({ type: 'complete', status: 'succeeded' });
  });

  it('cancels from B a run going on A: its process stops', async () => {
    const deploymentId = await deploy(a, crew('slow.mjs'));
    const run = await startRun(a, deploymentId, { interval_ms: 100 });
    const pid = await runnerPid(run.run_id);
    strays.push(pid);
    expect(pidAlive(pid)).toBe(true);

    const canceled = await b.call('POST', `/v1/runs/${run.run_id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(await canceled.json()).toEqual({ success: true, status: 'canceled' });
    await until(async () => !pidAlive(pid));
    expect((await getRun(a, run.run_id)).status).toBe('canceled');
  });

  it('starts a pending run on whichever instance has a free slot', async () => {
    const deploymentId = await deploy(a, crew('slow.mjs'));
    const first = await startRun(a, deploymentId, { interval_ms: 100 });
    strays.push(await runnerPid(first.run_id));
    // A's only slot is taken: the next run queues, and B (free) takes it.
    const second = await startRun(a, deploymentId, { interval_ms: 100 });
    strays.push(await runnerPid(second.run_id));
    expect((await getRun(b, second.run_id)).status).toBe('running');
    const [firstOwner, secondOwner] = [await instanceOf(first.run_id), await instanceOf(second.run_id)];
    expect(firstOwner).not.toBeNull();
    expect(secondOwner).not.toBeNull();
    expect(secondOwner).not.toBe(firstOwner);

    for (const run of [first, second]) {
      expect((await b.call('POST', `/v1/runs/${run.run_id}/cancel`)).status).toBe(200);
    }
    // Both slots free again before the next test.
    await until(async () => strays.every((pid) => !pidAlive(pid)));
  });

  it('sends each delivery once although two instances deliver', async () => {
    const deploymentId = await deploy(a, crew('trivial.mjs'));
    const hook = await a.call('POST', '/v1/webhooks', {
      deployment_id: deploymentId,
      name: 'once',
      url: receiver.url,
      events: ['run.succeeded', 'run.failed'],
    });
    expect(hook.status).toBe(201);
    const { id: hookId, secret } = await hook.json();
    receiver.secret = secret;
    receiver.received.length = 0;

    const runIds: string[] = [];
    for (let i = 0; i < 12; i++) {
      const via = i % 2 === 0 ? a : b;
      const run = await startRun(via, deploymentId, { i });
      runIds.push(run.run_id);
    }
    for (const runId of runIds) await until(async () => (await getRun(b, runId)).status === 'succeeded');
    const deliveries = await until(async () => {
      const list = await (await b.call('GET', `/v1/webhooks/${hookId}/deliveries?limit=100`)).json();
      const all = list.deliveries as { status: string }[];
      return all.length === 12 && all.every((delivery) => delivery.status === 'succeeded') ? all : undefined;
    });
    expect(deliveries).toHaveLength(12);
    const ids = receiver.received.map((delivery) => delivery.headers['x-service-delivery']);
    expect(ids).toHaveLength(12);
    expect(new Set(ids).size).toBe(12);
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
    await b.call('DELETE', `/v1/webhooks/${hookId}`);
  });

  it('fails the runs of an instance killed with -9, frees their threads and delivers from the other', async () => {
    const deploymentId = await deploy(a, crew('slow.mjs'));
    const hook = await a.call('POST', '/v1/webhooks', {
      deployment_id: deploymentId,
      name: 'lost',
      url: receiver.url,
      events: ['run.failed'],
    });
    const { secret } = await hook.json();
    receiver.secret = secret;
    receiver.received.length = 0;
    const thread = await (await a.call('POST', '/v1/threads', { deployment_id: deploymentId })).json();
    // A's only slot frees once the last test's runner is gone: a run that had to queue meanwhile is let go.
    const run = await until(async () => {
      const started = await a.call('POST', `/v1/threads/${thread.thread_id}/runs`, { input: { interval_ms: 100 } });
      expect(started.status).toBe(202);
      const created = await started.json();
      if (created.status === 'running') return created;
      await a.call('POST', `/v1/runs/${created.run_id}/cancel`);
      return undefined;
    }, 5000);
    expect(run.status).toBe('running');
    const pid = await runnerPid(run.run_id);
    strays.push(pid);
    expect(await instanceOf(run.run_id)).not.toBeNull();
    expect((await (await b.call('GET', `/v1/threads/${thread.thread_id}`)).json()).status).toBe('busy');

    // A stream on B follows the run through A's death to its end.
    const streamed = readStream(`${b.baseUrl}/v1/runs/${run.run_id}/events`);
    await a.kill();
    // Its runner goes with it (the spawner helper stops what it started once the service is gone).
    await until(async () => !pidAlive(pid));

    const ended = await until(async () => {
      const row = await getRun(b, run.run_id);
      return row.status === 'running' ? undefined : row;
    });
    expect(ended.status).toBe('failed');
    expect(ended.error_message).toBe(LOST_RUN_ERROR);
    const threadAfter = await (await b.call('GET', `/v1/threads/${thread.thread_id}`)).json();
    expect(threadAfter.status).toBe('error');

    const { messages } = await streamed;
    const last = messages.filter((message: SseMessage) => message.data).at(-1);
    expect(last?.data).toMatchObject({ type: 'complete', status: 'failed', error: LOST_RUN_ERROR });

    await until(async () => receiver.received.length >= 1);
    expect(receiver.received).toHaveLength(1);
    const payload = JSON.parse(receiver.received[0]?.body ?? '{}');
    expect(receiver.received[0]?.headers['x-service-event']).toBe('run.failed');
    expect(JSON.stringify(payload)).toContain(run.run_id);
  });
});
