import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import {
  crew,
  deploy,
  explainPostgresOnly,
  type Instance,
  pidAlive,
  readStream,
  runnerPid,
  startInstance,
  startRun,
  until,
} from './helpers.js';

explainPostgresOnly('a PostgreSQL outage', 'the embedded PGlite lives inside the process, so it cannot go down alone');

describe.runIf(usingPostgres())('a PostgreSQL outage under load', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let instance: Instance;

  beforeAll(async () => {
    database = await createTestDatabase();
    const target = new URL(database.url as string);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    instance = await startInstance('outage', proxy.via(database.url as string), { MAX_CONCURRENT_RUNS: '4' });
  });

  afterAll(async () => {
    proxy?.restore();
    await instance?.stop();
    await proxy?.close();
    await database?.destroy();
  });

  it('answers 503 while the database is down, recovers by itself and leaves no run inconsistent', {
    // The runs queued behind the outage drain at the machine's pace: up to a minute on two loaded cores.
    timeout: 150_000,
  }, async () => {
    const slow = await deploy(instance, crew('slow.mjs'));
    const quick = await deploy(instance, crew('trivial.mjs'));
    const chatty = await deploy(instance, crew('timed-events.mjs'));
    const thread = await (await instance.call('POST', '/v1/threads', { deployment_id: slow })).json();

    // Runs that are going on when the database goes away, and end while it is away.
    const runIds: string[] = [];
    runIds.push((await startRun(instance, slow, { interval_ms: 50, ticks: 20 })).run_id);
    runIds.push(
      (await startRun(instance, slow, { interval_ms: 50, ticks: 20 }, { thread_id: thread.thread_id })).run_id,
    );
    const stream = readStream(`${instance.baseUrl}/v1/runs/${runIds[0]}/events`);
    const slowPids = await Promise.all(runIds.map((runId) => runnerPid(database.handle.db, runId)));

    // Steady load meanwhile: reads and new runs.
    const statuses: number[] = [];
    const bodies: unknown[] = [];
    let loading = true;
    const load = (async () => {
      while (loading) {
        const read = await instance.call('GET', `/v1/runs/${runIds[0]}`).catch(() => null);
        const created = await instance.call('POST', '/v1/runs', { deployment_id: quick, input: {} }).catch(() => null);
        for (const response of [read, created]) {
          // A request that never got an answer (a hang or a dropped connection) counts as a failure.
          if (!response) statuses.push(0);
          else {
            statuses.push(response.status);
            const body = await response.json();
            if (response.status >= 500) bodies.push(body);
            if (response.status === 202) runIds.push(body.run_id);
          }
        }
        await sleep(20);
      }
    })();

    await until(async () => statuses.length >= 4);
    // A run writing an event every millisecond through the outage: thousands wait to be stored.
    const busy = (await startRun(instance, chatty, { count: 4000, interval_ms: 1 })).run_id;
    runIds.push(busy);
    proxy.cut();
    const downFrom = statuses.length;
    await until(async () => statuses.slice(downFrom).filter((status) => status === 503).length >= 10);
    // The running runs end while their ends cannot be written.
    await until(async () => slowPids.every((pid) => !pidAlive(pid)), 15_000);
    const duringOutage = statuses.slice(downFrom);
    proxy.restore();

    // Back by itself: reads and new runs succeed again.
    const upFrom = statuses.length;
    await until(async () => statuses.slice(upFrom).some((status) => status === 202), 30_000);
    loading = false;
    await load;

    // The process lived through it (an unheard connection error would have crashed it).
    expect(instance.server.child.exitCode).toBeNull();
    expect(statuses).not.toContain(0);
    expect(statuses.filter((status) => status >= 500 && status !== 503)).toEqual([]);
    expect(duringOutage).toContain(503);
    for (const body of bodies) {
      expect(body).toEqual({
        error: { message: 'Service unavailable: the database cannot be reached', code: 'unavailable' },
      });
    }

    // Every run reaches its end; none is left pending or running, and the thread is not stuck busy.
    const db = database.handle.db;
    await until(async () => {
      const open = await db.selectFrom('runs').select('id').where('status', 'in', ['pending', 'running']).execute();
      return open.length === 0;
    }, 60_000);
    const rows = await db.selectFrom('runs').select(['id', 'status']).where('id', 'in', runIds).execute();
    expect(rows).toHaveLength(runIds.length);
    const slowRuns = rows.filter((row) => row.id === runIds[0] || row.id === runIds[1]);
    // Their ends were kept and written once the database came back.
    expect(slowRuns.map((row) => row.status)).toEqual(['succeeded', 'succeeded']);
    // So were the events they wrote while it was away: every one stored, numbered without a gap.
    for (const runId of [runIds[0], runIds[1]] as string[]) {
      const events = await db
        .selectFrom('run_events')
        .select(['seq', 'type', 'data'])
        .where('run_id', '=', runId)
        .orderBy('seq')
        .execute();
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
      const ticks = events.filter((event) => /^tick \d+$/.test((event.data as { message?: string }).message ?? ''));
      expect(ticks).toHaveLength(20);
      expect(events[0]?.type).toBe('run.started');
      expect(events.at(-1)?.type).toBe('run.completed');
    }
    const busyEvents = await db
      .selectFrom('run_events')
      .select(['seq', 'type'])
      .where('run_id', '=', busy)
      .orderBy('seq')
      .execute();
    expect(busyEvents.map((event) => event.seq)).toEqual(busyEvents.map((_, index) => index + 1));
    expect(busyEvents.filter((event) => event.type === 'tick')).toHaveLength(4000);
    const threadRow = await db
      .selectFrom('threads')
      .select('status')
      .where('id', '=', thread.thread_id)
      .executeTakeFirstOrThrow();
    expect(threadRow.status).toBe('idle');

    const { messages } = await stream;
    const last = messages.filter((message) => message.data).at(-1);
    expect(['complete', 'error']).toContain(last?.data?.type);
  });
});
