import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createScratchDatabase } from './lib/database.js';
import { percentile, printFigure } from './lib/figures.js';
import { type JsonTarget, jsonRequest } from './lib/json-request.js';
import { type Proc, startProcess } from './lib/node-process.js';

/*
 * `npm run bench -- crons`: CRONS_COUNT (default 200) crons, each due every second, for
 * CRONS_SECONDS (default 30) on two crewd instances (real processes) on one PostgreSQL.
 * Figures: runs started ÷ due times of the window (goal exactly 1: none missed, none doubled),
 * and the lateness of each run's start (its creation) after its due time. A due time's run is
 * found through the idempotency key the scheduler gives it (the due time itself).
 */

const KEY = 'bench-crons-admin-key-0123456789';
const CRONS = Number(process.env.CRONS_COUNT ?? 200);
const SECONDS = Number(process.env.CRONS_SECONDS ?? 30);
// The cheapest runner that speaks the protocol: one line from the shell, so the bench measures the scheduler.
const COMMAND = ['/bin/sh', '-c', 'echo \'{"type":"run.completed","data":{"output":{}}}\''];

function startCrewd(databaseUrl: string, dataDir: string): Promise<Proc> {
  return startProcess(
    ['--import', 'tsx', 'src/server.ts'],
    {
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      BOOTSTRAP_API_KEY: KEY,
      LOG_LEVEL: 'warn',
      MAX_CONCURRENT_RUNS: process.env.CRONS_MAX_CONCURRENT_RUNS ?? '16',
      INSTANCE_LEASE_SECONDS: '10',
      CRON_DEBUG: process.env.CRON_DEBUG ?? '',
    },
    '/readyz',
  );
}

interface DueTime {
  cronId: string;
  due: number;
  runId: string;
}

/** Every due time the crons started a run for, from the scheduler's idempotency keys. */
async function startedDueTimes(db: pg.Client): Promise<DueTime[]> {
  const { rows } = await db.query<{ scope: string; key: string; run_id: string }>(
    `select scope, key, response->>'run_id' as run_id from idempotency_keys where scope like 'cron:%'`,
  );
  return rows.map((row) => ({ cronId: row.scope.slice('cron:'.length), due: Date.parse(row.key), runId: row.run_id }));
}

export async function run(): Promise<void> {
  const database = await createScratchDatabase();
  const dirs: string[] = [];
  const servers: Proc[] = [];
  const client = new pg.Client({ connectionString: database.url });
  try {
    for (const name of ['a', 'b']) {
      const dir = mkdtempSync(path.join(tmpdir(), `crewd-bench-crons-${name}-`));
      dirs.push(dir);
      servers.push(await startCrewd(database.url, dir));
    }
    const [a, b] = servers as [Proc, Proc];
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const target = (server: Proc): JsonTarget => ({ port: server.port, key: KEY, agent });
    await client.connect();

    const deployment = await jsonRequest(target(a), 'POST', '/v1/deployments', { name: 'cron-bench' }, 201);
    await jsonRequest(target(a), 'POST', `/v1/deployments/${deployment.id}/versions`, {
      command: COMMAND,
      environment: 'production',
    });
    const cronIds: string[] = [];
    for (let i = 0; i < CRONS; i++) {
      // Half through each instance; the other learns of them from the notification.
      const cron = await jsonRequest(
        target(i % 2 === 0 ? a : b),
        'POST',
        '/v1/crons',
        { deployment_id: deployment.id, schedule: '* * * * * *', input: { i } },
        201,
      );
      cronIds.push(cron.id);
    }

    // The window: whole seconds from one second after the last cron exists.
    const windowStart = Math.ceil(Date.now() / 1000) * 1000 + 1000;
    const windowEnd = windowStart + SECONDS * 1000;
    await sleep(windowEnd - Date.now() + 1500);
    await client.query('update crons set enabled = false, next_run_at = null');
    for (let i = 0; i < 600; i++) {
      const { rows } = await client.query('select count(*)::int as n from crons where claimed_until is not null');
      if (rows[0].n === 0) break;
      await sleep(100);
    }

    const inWindow = (await startedDueTimes(client)).filter((d) => d.due >= windowStart && d.due < windowEnd);
    const { rows: runs } = await client.query<{ id: string; cron_id: string; created_at: Date }>(
      'select id, cron_id, created_at from runs where cron_id is not null',
    );
    const runById = new Map(runs.map((row) => [row.id, row]));
    const expected = CRONS * SECONDS;
    const keyed = new Set((await startedDueTimes(client)).map((d) => d.runId));
    // A due time has one key, so a second run for it could only be one no key names.
    const doubled = runs.filter((row) => !keyed.has(row.id)).length;
    const missed = expected - inWindow.length;
    const lateness = inWindow.flatMap((d) => {
      const row = runById.get(d.runId);
      return row ? [row.created_at.getTime() - d.due] : [];
    });

    process.stdout.write(
      `crons: ${CRONS} crons every second for ${SECONDS} s on two instances: ${expected} due times, ` +
        `${inWindow.length} started, ${missed} missed, ${doubled} doubled\n`,
    );
    printFigure('crons.runs_per_due_time', (inWindow.length + doubled) / expected, 'ratio', { op: '=', target: 1 });
    printFigure('crons.missed_due_times', missed, 'due times', { op: '=', target: 0 });
    printFigure('crons.doubled_runs', doubled, 'runs', { op: '=', target: 0 });
    printFigure('crons.start_lateness_p50', percentile(lateness, 50), 'ms');
    printFigure('crons.start_lateness_p99', percentile(lateness, 99), 'ms', { op: '<=', target: 250 });
    printFigure('crons.start_lateness_max', Math.max(...lateness), 'ms');
    agent.destroy();
  } finally {
    await client.end().catch(() => {});
    for (const server of servers) await server.stop().catch(() => {});
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await database.drop();
  }
}
