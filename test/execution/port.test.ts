import { rmSync } from 'node:fs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapDefaultOrganization, DEFAULT_ORG_ID } from '../../src/access/bootstrap.js';
import { composeServices, type Services } from '../../src/compose.js';
import type { CancelOutcome, Seat } from '../../src/execution/port.js';
import { newId } from '../../src/ids.js';
import * as repo from '../../src/run-record/repository.js';
import type { LaunchSpec } from '../../src/run-record/types.js';
import { testConfig } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { until } from '../helpers/poll.js';
import { crew, FAST_TIMINGS } from '../runs/helpers.js';
import { commandLaunch } from './helpers.js';

/**
 * The executor's port as the APIs over runs use it, on a real database and real runner processes,
 * with one slot: a slot not given back would leave the next run `pending`.
 */
describe('the executor port', () => {
  let database: TestDatabase;
  let services: Services;
  let dataDir: string;
  let version: { id: string; deploymentId: string };

  beforeAll(async () => {
    database = await createTestDatabase();
    const config = testConfig({ MAX_CONCURRENT_RUNS: '1' });
    dataDir = config.dataDir;
    await bootstrapDefaultOrganization(database.handle.db, config.bootstrapApiKey);
    services = await composeServices({
      config,
      database: database.handle,
      logger: pino({ level: 'silent' }),
      timings: FAST_TIMINGS,
    });
    await services.start();
    const { deployments } = services.services;
    const deployment = await deployments.create(DEFAULT_ORG_ID, 'port');
    const created = await deployments.createVersion(DEFAULT_ORG_ID, deployment.id, {
      command: crew('slow.mjs'),
      environment: 'production',
      env: {},
    });
    version = { id: created.id, deploymentId: deployment.id };
    // The queue takes new runs once its first look for pending ones is done.
    await until(async () => (await seatTaken()) === 'running');
  });

  afterAll(async () => {
    await services?.stop();
    await database?.destroy();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const run = () => ({ id: newId('run'), orgId: DEFAULT_ORG_ID });

  /** The seat a startable run is given, by an insert that then writes nothing (as a replayed request does). */
  async function seatTaken(): Promise<Seat['status']> {
    const admitted = await services.executor.admit(run(), async (seat) => ({ answer: seat(true).status }));
    if (!('answer' in admitted)) throw new Error('nothing was to be created');
    return admitted.answer;
  }

  it('gives the slot back when the insert answers without writing a run (a replay)', async () => {
    expect(await seatTaken()).toBe('running');
    expect(await seatTaken()).toBe('running');
  });

  it('gives the slot back when the insert throws', async () => {
    const failing = services.executor.admit(run(), async (seat) => {
      expect(seat(true).status).toBe('running');
      throw new Error('the insert failed');
    });
    await expect(failing).rejects.toThrow('the insert failed');
    expect(await seatTaken()).toBe('running');
  });

  it('gives the first slot back when a retried transaction takes its seat again', async () => {
    const seats = await services.executor.admit(run(), async (seat) => ({
      answer: [seat(true).status, seat(true).status],
    }));
    expect(seats).toEqual({ answer: ['running', 'running'] });
    expect(await seatTaken()).toBe('running');
  });

  it('seats a run that may not start yet as pending, without a slot', async () => {
    const seat = await services.executor.admit(run(), async (take) => ({ answer: take(false) }));
    expect(seat).toEqual({ answer: { status: 'pending', instanceId: null } });
    expect(await seatTaken()).toBe('running');
  });

  /** Writes the run as the run service does, in the seat it was given. */
  async function insert(id: string, seat: Seat): Promise<void> {
    const now = new Date();
    await repo.insertRun(database.handle.db, {
      id,
      org_id: DEFAULT_ORG_ID,
      deployment_id: version.deploymentId,
      version_id: version.id,
      environment: 'production',
      thread_id: null,
      cron_id: null,
      cron_due_at: null,
      status: seat.status,
      input: {},
      command: null,
      instance_id: seat.instanceId,
      created_at: now,
      started_at: seat.status === 'running' ? now : null,
    });
  }

  const spec = (id: string): LaunchSpec =>
    commandLaunch(
      { id, org_id: DEFAULT_ORG_ID, deployment_id: version.deploymentId, version_id: version.id, thread_id: null },
      crew('slow.mjs'),
    );

  it("resolves a cancel once the run's end is committed, even one asked between the commit and the launch", async () => {
    const { id } = run();
    let canceling: Promise<CancelOutcome> | null = null;
    const admitted = await services.executor.admit({ id, orgId: DEFAULT_ORG_ID }, async (seat) => {
      const taken = seat(true);
      await insert(id, taken);
      return {
        created: id,
        spec: () => spec(id),
        // The row says `running` on this instance; the executor has not launched the run yet.
        committed: () => {
          canceling = services.executor.cancel({ id, instance_id: taken.instanceId });
        },
      };
    });
    expect(await canceling).toBe('canceled');
    expect((await repo.findRun(database.handle.db, DEFAULT_ORG_ID, id))?.status).toBe('canceled');
    expect(admitted).toEqual({ created: id, status: 'canceled' });
    // Its slot is free once nothing of it is left.
    await until(async () => (await seatTaken()) === 'running');
  });

  it("resolves a cancel of a running run once its end is committed, and a second one once the first's is", async () => {
    const { id } = run();
    const admitted = await services.executor.admit({ id, orgId: DEFAULT_ORG_ID }, async (seat) => {
      await insert(id, seat(true));
      return { created: id, spec: () => spec(id) };
    });
    expect(admitted).toEqual({ created: id, status: 'running' });
    const row = { id, instance_id: (await repo.findRun(database.handle.db, DEFAULT_ORG_ID, id))?.instance_id ?? null };
    const [first, second] = await Promise.all([services.executor.cancel(row), services.executor.cancel(row)]);
    expect([first, second]).toEqual(['canceled', 'ended']);
    expect((await repo.findRun(database.handle.db, DEFAULT_ORG_ID, id))?.status).toBe('canceled');
    expect(await services.executor.cancel({ id, instance_id: 'ins_another' })).toBe('not-here');
    await until(async () => (await seatTaken()) === 'running');
  });
});
