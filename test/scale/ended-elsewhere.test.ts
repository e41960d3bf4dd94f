import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { follow, holdEventNumber, untilLockWaits, untilStored } from '../run-record/unstored-events.js';
import {
  crew,
  deploy,
  explainPostgresOnly,
  type Instance,
  pidAlive,
  readStream,
  startInstance,
  startRun,
  until,
} from './helpers.js';

explainPostgresOnly(
  'a run ended by another instance',
  'embedded PGlite is one process, so there is no second instance',
);

/**
 * A run canceled through another instance while its owner had published events not stored yet: the end, made
 * without those events, takes the number of one of them (docs/ARCHITECTURE.md, the cancel paragraph). A stream on
 * the owner's instance that got that event live still gets the final event, with its stored number, before
 * `complete`; so does a client resuming past it. A stream opened on the owner once it learned of the end (and sent
 * SIGTERM to a runner that outlives it) gets the end from the store at once, before the process is gone.
 */
describe.runIf(usingPostgres())('a run ended by another instance while events its owner published are unstored', () => {
  let database: TestDatabase;
  let a: Instance;
  let b: Instance;
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-ended-elsewhere-'));

  beforeAll(async () => {
    database = await createTestDatabase();
    const url = database.url as string;
    // The runner reads its go-files in a folder of the test, which the sandbox by design does not show it.
    const env = { RUNNER_SANDBOX: 'off' };
    [a, b] = await Promise.all([startInstance('a', url, env), startInstance('b', url, env)]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const db = () => database.handle.db;

  it('the owner’s live stream gets the final event numbered below what it sent; a resume past it gets complete', async () => {
    const deploymentId = await deploy(a, crew('bursts.mjs'));
    const { run_id: runId } = await startRun(a, deploymentId, { dir, bursts: 2, size: 3, hold: true });
    const url = (instance: Instance) => `${instance.baseUrl}/v1/runs/${runId}/events`;
    const client = follow(url(a));
    await client.reached(1);

    // The log's batch holding number 2 waits for the test: from there on, A's events stay unstored.
    const held = await holdEventNumber(db(), runId, 2);
    writeFileSync(path.join(dir, 'go-1'), '');
    await client.reached(4);
    await untilLockWaits(db(), 1, held.pid);
    writeFileSync(path.join(dir, 'go-2'), '');
    await client.reached(7);

    const canceled = b.call('POST', `/v1/runs/${runId}/cancel`);
    // The batch waits for the test, B's end for the batch; then 2-4 are stored, and 5-7 only on A.
    await untilLockWaits(db(), 2);
    await held.release();
    expect((await canceled).status).toBe(200);

    const { messages } = await client.done;
    const events = messages.filter((message) => message.data !== undefined);
    expect(events.map((message) => [message.id, (message.data as { type: string }).type])).toEqual([
      ['1', 'run.started'],
      ...[2, 3, 4, 5, 6, 7].map((seq) => [String(seq), 'tick']),
      ['5', 'run.canceled'],
      [undefined, 'complete'],
    ]);
    const stored = await db()
      .selectFrom('run_events')
      .select(['seq', 'type'])
      .where('run_id', '=', runId)
      .orderBy('seq')
      .execute();
    expect(stored.map((row) => row.type)).toEqual(['run.started', 'tick', 'tick', 'tick', 'run.canceled']);

    // The events after 7 (CONTRACTS §7): none, then complete.
    const resumed = await readStream(`${url(b)}?last_event_id=7`);
    expect(resumed.messages.map((message) => (message.data as { type: string } | undefined)?.type)).toEqual([
      'complete',
    ]);
    const fromFour = await readStream(`${url(b)}?last_event_id=4`);
    expect(fromFour.messages.map((message) => message.id)).toEqual(['5', undefined]);
  });

  it('a stream opened on the owner after it learned of the end completes while the process is still stopping', async () => {
    const deploymentId = await deploy(a, crew('bursts.mjs'));
    // The runner outlives SIGTERM: the owner holds the run as its own until SIGKILL, 5 s later.
    const runDir = mkdtempSync(path.join(dir, 'linger-'));
    const { run_id: runId } = await startRun(a, deploymentId, {
      dir: runDir,
      bursts: 1,
      size: 2,
      hold: true,
      linger: true,
    });
    writeFileSync(path.join(runDir, 'go-1'), '');
    // Its ticks stored: the runner reads SIGTERM from here on.
    await untilStored(db(), runId, 3);

    expect((await b.call('POST', `/v1/runs/${runId}/cancel`)).status).toBe(200);
    // The owner learned of the end (the signal or its tick) and sent SIGTERM; its process lingers.
    const terminated = path.join(runDir, 'terminated');
    const pid = await until(async () => existsSync(terminated) && Number(readFileSync(terminated, 'utf8')));

    const url = `${a.baseUrl}/v1/runs/${runId}/events`;
    const [fresh, resumed] = await Promise.all([readStream(url), readStream(`${url}?last_event_id=3`)]);
    // Both streams are over before the process is (before, they waited for their first quiet look, 15 s on).
    expect(pidAlive(pid)).toBe(true);
    expect(fresh.messages.map((message) => message.data)).toEqual([
      { type: 'complete', status: 'canceled', output: null, error: null },
    ]);
    expect(resumed.messages.map((message) => [message.id, (message.data as { type: string }).type])).toEqual([
      ['4', 'run.canceled'],
      [undefined, 'complete'],
    ]);
    await until(async () => !pidAlive(pid));
  });
});
