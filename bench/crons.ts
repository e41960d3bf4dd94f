import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createScratchDatabase } from './lib/database.js';
import { percentile, printFigure } from './lib/figures.js';
import { type JsonTarget, jsonRequest } from './lib/json-request.js';
import { type Proc, startCrewd as startCrewdProcess } from './lib/node-process.js';

/*
 * `npm run bench -- crons`: CRONS_COUNT (default 200) crons, each due every second, for
 * CRONS_SECONDS (default 30) on two crewd instances (real processes) on one PostgreSQL.
 * Figures: runs started ÷ due times of the window (goal exactly 1: none missed, none doubled),
 * and the lateness of each run's start (its creation) after its due time, read from each run's
 * `cron_due_at`.
 * Baseline, measured in the same run on the same instances: this process itself starting the
 * same number of runs a second through POST /v1/runs for CRONS_BASELINE_SECONDS (default 10),
 * with their lateness after the second each was meant for: what the run path alone achieves here.
 */

const KEY = 'bench-crons-admin-key-0123456789';
const CRONS = Number(process.env.CRONS_COUNT ?? 200);
const SECONDS = Number(process.env.CRONS_SECONDS ?? 30);
const BASELINE_SECONDS = Number(process.env.CRONS_BASELINE_SECONDS ?? 10);
// The cheapest runner that speaks the protocol: one line from the shell, so the bench measures starting runs.
const COMMAND = ['/bin/sh', '-c', 'echo \'{"type":"run.completed","data":{"output":{}}}\''];

function startCrewd(databaseUrl: string, dataDir: string): Promise<Proc> {
  return startCrewdProcess(databaseUrl, dataDir, KEY, {
    MAX_CONCURRENT_RUNS: '16',
    INSTANCE_LEASE_SECONDS: '10',
    // Every-second crons, more of them than the default allows one organization.
    CRON_MIN_INTERVAL_SECONDS: '1',
    MAX_CRONS_PER_ORGANIZATION: String(CRONS),
  });
}

const nextWholeSecond = () => Math.ceil(Date.now() / 1000) * 1000;

/** Lateness (ms) of each run's creation after the time it was meant for. */
async function lateness(db: pg.Client, meantFor: Map<string, number>): Promise<number[]> {
  const { rows } = await db.query<{ id: string; created_at: Date }>(
    'select id, created_at from runs where id = any($1)',
    [[...meantFor.keys()]],
  );
  return rows.map((row) => row.created_at.getTime() - (meantFor.get(row.id) as number));
}

/** Prints the crons' figures; returns the lateness of each run. */
async function measureCrons(db: pg.Client, instances: JsonTarget[], deploymentId: string): Promise<number[]> {
  for (let i = 0; i < CRONS; i++) {
    // Half through each instance; the other learns of them from the notification.
    await jsonRequest(
      instances[i % instances.length] as JsonTarget,
      'POST',
      '/v1/crons',
      { deployment_id: deploymentId, schedule: '* * * * * *', input: { i } },
      201,
    );
  }
  // The window: whole seconds from one second after the last cron exists.
  const windowStart = nextWholeSecond() + 1000;
  const windowEnd = windowStart + SECONDS * 1000;
  await sleep(windowEnd - Date.now() + 1500);
  await db.query('update crons set enabled = false, next_run_at = null');
  for (let i = 0; i < 600; i++) {
    const { rows } = await db.query('select count(*)::int as n from crons where claimed_until is not null');
    if (rows[0].n === 0) break;
    await sleep(100);
  }

  const { rows: runs } = await db.query<{ id: string; cron_id: string; cron_due_at: Date }>(
    'select id, cron_id, cron_due_at from runs where cron_id is not null',
  );
  // Counted here rather than trusted to the unique index: runs beyond one per cron and due time.
  const doubled = runs.length - new Set(runs.map((row) => `${row.cron_id}@${row.cron_due_at.getTime()}`)).size;
  const inWindow = new Map<string, number>();
  for (const row of runs) {
    const due = row.cron_due_at.getTime();
    if (due >= windowStart && due < windowEnd) inWindow.set(row.id, due);
  }
  const expected = CRONS * SECONDS;
  const missed = expected - inWindow.size;
  const late = await lateness(db, inWindow);

  process.stdout.write(
    `crons: ${CRONS} crons every second for ${SECONDS} s on two instances: ${expected} due times, ` +
      `${inWindow.size} started, ${missed} missed, ${doubled} doubled\n`,
  );
  printFigure('crons.runs_per_due_time', inWindow.size / expected, 'ratio', { op: '=', target: 1 });
  printFigure('crons.missed_due_times', missed, 'due times', { op: '=', target: 0 });
  printFigure('crons.doubled_runs', doubled, 'runs', { op: '=', target: 0 });
  printFigure('crons.start_lateness_p50', percentile(late, 50), 'ms');
  printFigure('crons.start_lateness_p99', percentile(late, 99), 'ms', { op: '<=', target: 250 });
  printFigure('crons.start_lateness_max', Math.max(...late), 'ms');
  // The machine's own busyness, which lateness follows: runnable processes per core, over the last minute.
  printFigure('crons.machine_load_per_core', (loadavg()[0] as number) / availableParallelism(), 'processes');
  return late;
}

/** Prints the baseline's figures; returns the lateness of each run. */
async function measureApiBaseline(db: pg.Client, ports: number[], deploymentId: string): Promise<number[]> {
  // A connection per request of a second, so no request waits for a socket here.
  const agent = new http.Agent({ keepAlive: true, maxSockets: CRONS });
  const instances = ports.map((port): JsonTarget => ({ port, key: KEY, agent }));
  const meantFor = new Map<string, number>();
  let failed = 0;
  const start = nextWholeSecond() + 1000;
  const requests: Promise<void>[] = [];
  for (let second = 0; second < BASELINE_SECONDS; second++) {
    const at = start + second * 1000;
    await sleep(at - Date.now());
    for (let i = 0; i < CRONS; i++) {
      const request = jsonRequest(instances[i % instances.length] as JsonTarget, 'POST', '/v1/runs', {
        deployment_id: deploymentId,
        input: { i },
      }).then(
        (created) => {
          meantFor.set(created.run_id, at);
        },
        () => {
          failed++;
        },
      );
      requests.push(request);
    }
  }
  await Promise.all(requests);
  agent.destroy();
  const late = await lateness(db, meantFor);
  printFigure('crons.baseline_api_runs_started', meantFor.size / (CRONS * BASELINE_SECONDS), 'ratio');
  printFigure('crons.baseline_api_failed_requests', failed, 'requests');
  printFigure('crons.baseline_api_start_lateness_p50', percentile(late, 50), 'ms');
  printFigure('crons.baseline_api_start_lateness_p99', percentile(late, 99), 'ms');
  return late;
}

export async function run(): Promise<void> {
  const database = await createScratchDatabase();
  const dirs: string[] = [];
  const servers: Proc[] = [];
  const db = new pg.Client({ connectionString: database.url });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  try {
    for (const name of ['a', 'b']) {
      const dir = mkdtempSync(path.join(tmpdir(), `crewd-bench-crons-${name}-`));
      dirs.push(dir);
      servers.push(await startCrewd(database.url, dir));
    }
    const instances = servers.map((server): JsonTarget => ({ port: server.port, key: KEY, agent }));
    const first = instances[0] as JsonTarget;
    await db.connect();
    const deployment = await jsonRequest(first, 'POST', '/v1/deployments', { name: 'cron-bench' }, 201);
    await jsonRequest(first, 'POST', `/v1/deployments/${deployment.id}/versions`, {
      command: COMMAND,
      environment: 'production',
    });
    const cronLateness = await measureCrons(db, instances, deployment.id);
    // The crons' runs drain first, so the baseline starts on idle instances.
    for (let i = 0; i < 600; i++) {
      const { rows } = await db.query(`select count(*)::int as n from runs where status in ('pending', 'running')`);
      if (rows[0].n === 0) break;
      await sleep(100);
    }
    if (BASELINE_SECONDS > 0) {
      const apiLateness = await measureApiBaseline(
        db,
        servers.map((server) => server.port),
        deployment.id,
      );
      printFigure(
        'crons.start_lateness_p99_vs_api',
        percentile(cronLateness, 99) / percentile(apiLateness, 99),
        'ratio (cron runs ÷ the same runs through POST /v1/runs)',
      );
    }
  } finally {
    agent.destroy();
    await db.end().catch(() => {});
    for (const server of servers) await server.stop().catch(() => {});
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await database.drop();
  }
}
