import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instanceName } from '../../src/execution/instance-lease.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';
import {
  CREWS,
  createRunContext,
  crew,
  deploy,
  type RunContext,
  runProcesses,
  startRun,
  until,
  waitForRun,
} from '../runs/helpers.js';

const LOST = 'Runner lost: the crewd instance running it stopped';

describe('restart and lost runs', () => {
  let ctx: RunContext;
  beforeAll(async () => {
    // A short lease, so that lapsed leases are found within a test's waits; not shorter, or this instance's own
    // lease lapses whenever a loaded machine stalls its heartbeat for a second (then it takes no run).
    ctx = await createRunContext({ MAX_CONCURRENT_RUNS: '1', INSTANCE_LEASE_SECONDS: '4' });
  });
  afterAll(() => ctx.close());

  async function insertRunningRun(runId: string, instanceId: string) {
    const { deploymentId, versionId } = await deploy(ctx, crew('trivial.mjs'));
    // One transaction: the housekeeping tick fails a lost run with the next event's seq, so it must never see the
    // run without its run.started event (it would take seq 1, and this insert would collide with it).
    await ctx.database.handle.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('runs')
        .values({
          id: runId,
          org_id: 'org_default',
          deployment_id: deploymentId,
          version_id: versionId,
          environment: 'production',
          thread_id: null,
          status: 'running',
          input: '{}',
          instance_id: instanceId,
          started_at: new Date(),
        })
        .execute();
      await trx
        .insertInto('run_events')
        .values({ run_id: runId, seq: 1, type: 'run.started', data: '{"entrypoint":"x"}' })
        .execute();
    });
  }

  it('fails runs of an instance whose lease lapsed, and of this instance’s previous life', async () => {
    const db = ctx.database.handle.db;
    await db
      .insertInto('instances')
      .values([
        { id: 'ins_dead', name: 'another-host:/data', expires_at: sql`now() - interval '1 second'` },
        { id: 'ins_previous', name: instanceName(ctx.config.dataDir), expires_at: sql`now() + interval '1 hour'` },
        { id: 'ins_alive', name: 'busy-host:/data', expires_at: sql`now() + interval '1 hour'` },
      ])
      .execute();
    await insertRunningRun('run_on_dead', 'ins_dead');
    await insertRunningRun('run_on_previous', 'ins_previous');
    await insertRunningRun('run_on_alive', 'ins_alive');

    for (const id of ['run_on_dead', 'run_on_previous']) {
      const run = await waitForRun(ctx, id);
      expect(run).toMatchObject({ status: 'failed', error_message: LOST });
      expect(run.completed_at).not.toBeNull();
      const events = await db
        .selectFrom('run_events')
        .select(['seq', 'type', 'data'])
        .where('run_id', '=', id)
        .orderBy('seq')
        .execute();
      expect(events.at(-1)).toEqual({ seq: 2, type: 'run.failed', data: { status: 'failed', error: LOST } });
    }
    // An instance that still renews its lease keeps its runs.
    expect((await ctx.call('GET', '/v1/runs/run_on_alive')).json().status).toBe('running');
    await db.updateTable('instances').set({ expires_at: sql`now()` }).where('id', '=', 'ins_alive').execute();
    expect((await waitForRun(ctx, 'run_on_alive')).error_message).toBe(LOST);
  });

  it('on shutdown fails running runs as lost, stops their processes, and leaves pending runs to the next start', async () => {
    const { deploymentId } = await deploy(ctx, crew('slow.mjs'));
    const running = await startRun(ctx, deploymentId);
    const pending = await startRun(ctx, deploymentId, { ticks: 2, interval_ms: 10 });
    expect([running.status, pending.status]).toEqual(['running', 'pending']);
    const pidEvent = await until(async () =>
      ctx.database.handle.db
        .selectFrom('run_events')
        .select('data')
        .where('run_id', '=', running.run_id)
        .where('type', '=', 'log')
        .executeTakeFirst(),
    );
    expect(pidEvent.data).toHaveProperty('pid');
    expect(runProcesses(running.run_id)).not.toEqual([]);

    await ctx.app.close();
    expect(runProcesses(running.run_id)).toEqual([]);
    const db = ctx.database.handle.db;
    const after = await db
      .selectFrom('runs')
      .select(['id', 'status', 'error_message'])
      .where('id', 'in', [running.run_id, pending.run_id])
      .execute();
    expect(after.find((run) => run.id === running.run_id)).toMatchObject({ status: 'failed', error_message: LOST });
    expect(after.find((run) => run.id === pending.run_id)).toMatchObject({ status: 'pending' });

    // The next start picks the queued run up.
    await ctx.restart();
    const run = await waitForRun(ctx, pending.run_id);
    expect(run).toMatchObject({ status: 'succeeded', output: { ticks: 2 } });
  });
});

describe('a crewd process killed with its runs', () => {
  let dataDir: string;
  let database: TestDatabase | undefined;
  let env: Record<string, string>;
  const KEY = 'recovery-test-bootstrap-key';

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-recovery-'));
    env = { DATA_DIR: dataDir, BOOTSTRAP_API_KEY: KEY };
    if (process.env.TEST_DATABASE_URL) {
      database = await createTestDatabase();
      env.DATABASE_URL = database.url as string;
    }
  });
  afterAll(async () => {
    await database?.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function api(server: ServerProcess, method: string, url: string, body?: unknown) {
    const response = await fetch(`${server.baseUrl}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return response.json() as Promise<Record<string, unknown>>;
  }

  it('finds no run stuck after a restart', async () => {
    const first = await startServer(env);
    const deployment = await api(first, 'POST', '/v1/deployments', { name: 'crash' });
    await api(first, 'POST', `/v1/deployments/${deployment.id}/versions`, {
      command: [process.execPath, path.join(CREWS, 'slow.mjs')],
      environment: 'production',
    });
    const created = await api(first, 'POST', '/v1/runs', { deployment_id: deployment.id });
    expect(created.status).toBe('running');
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await startServer(env);
    try {
      const run = await until(async () => {
        const current = await api(second, 'GET', `/v1/runs/${created.run_id}`);
        return current.status === 'running' ? null : current;
      });
      expect(run).toMatchObject({ status: 'failed', error_message: LOST });
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  }, 60_000);
});
