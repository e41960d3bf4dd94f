import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { createScratchDatabase } from './lib/database.js';
import { percentile, printFigure } from './lib/figures.js';
import { type Proc, startCrewd } from './lib/node-process.js';

/**
 * `npm run bench -- webhooks`: 500 runs of a trivial crew end while a local receiver counts the
 * deliveries of one outgoing webhook. Prints lost deliveries and duplicates (goal 0 each) and the
 * time from a run's `completed_at` to the receipt of its delivery (goal: p99 at most 250 ms).
 * On PostgreSQL (BENCH_DATABASE_URL). crewd runs as its own process (src/server.ts), as a service
 * does: the receiver and the clients starting runs are this process, not crewd's event loop.
 */

const RUNS = 500;
const CLIENTS = 16;
/** How long to wait for the last deliveries after the last run ended. */
const DRAIN_MS = 30_000;
const KEY = 'bench-admin-key-0123456789';
const CREW = path.resolve(import.meta.dirname, '../examples/crews/trivial.mjs');

interface Receipt {
  runId: string;
  receivedAt: number;
}

async function startReceiver() {
  const byDelivery = new Map<string, Receipt[]>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const receivedAt = Date.now();
      const id = String(req.headers['x-service-delivery']);
      const runId = JSON.parse(Buffer.concat(chunks).toString('utf8')).data.run_id as string;
      byDelivery.set(id, [...(byDelivery.get(id) ?? []), { runId, receivedAt }]);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    byDelivery,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function run(): Promise<void> {
  const scratch = await createScratchDatabase();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-bench-webhooks-'));
  const receiver = await startReceiver();
  let crewd: Proc | undefined;
  let client: Pool | undefined;
  try {
    crewd = await startCrewd(scratch.url, dataDir, KEY, {
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      // Runners sandboxed where bubblewrap works, as in production; RUNNER_SANDBOX=off compares with plain runners.
      ...(process.env.RUNNER_SANDBOX ? { RUNNER_SANDBOX: process.env.RUNNER_SANDBOX } : {}),
      ...(process.env.RUNNER_SPAWNER ? { RUNNER_SPAWNER: process.env.RUNNER_SPAWNER } : {}),
    });
    const { port } = crewd;
    client = new Pool(`http://127.0.0.1:${port}`, { connections: CLIENTS });
    const api = client;
    const call = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
      const response = await api.request({
        method,
        path: url,
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const json = (await response.body.json()) as Record<string, unknown>;
      if (response.statusCode >= 300)
        throw new Error(`${method} ${url}: ${response.statusCode} ${JSON.stringify(json)}`);
      return json;
    };

    const deployment = (await call('POST', '/v1/deployments', { name: 'bench' })) as { id: string };
    await call('POST', `/v1/deployments/${deployment.id}/versions`, {
      command: [process.execPath, CREW],
      environment: 'production',
    });
    await call('POST', '/v1/webhooks', {
      deployment_id: deployment.id,
      name: 'bench receiver',
      url: receiver.url,
      events: ['run.succeeded', 'run.failed'],
    });

    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < RUNS) {
          const i = next++;
          await call('POST', '/v1/runs', { deployment_id: deployment.id, input: { i } });
        }
      }),
    );

    // Every run ended, then every delivery arrived (or the drain time passed).
    type RunRow = { id: string; status: string; completed_at: string | null };
    // Light polling (totals only), so the measuring does not load the instance it measures.
    const open = async (status: string) =>
      ((await call('GET', `/v1/runs?deployment_id=${deployment.id}&status=${status}&limit=1`)) as { total: number })
        .total;
    while ((await open('pending')) + (await open('running')) > 0) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const { runs } = (await call('GET', `/v1/runs?deployment_id=${deployment.id}&limit=1000`)) as { runs: RunRow[] };
    const ended = runs.filter((r) => r.status === 'succeeded' || r.status === 'failed');
    const deadline = Date.now() + DRAIN_MS;
    const receivedRuns = () => new Set([...receiver.byDelivery.values()].flat().map((r) => r.runId));
    while (Date.now() < deadline && ended.some((r) => !receivedRuns().has(r.id))) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // A short quiet period, so a late duplicate is counted too.
    await new Promise((resolve) => setTimeout(resolve, 1000));

    const receipts = [...receiver.byDelivery.values()];
    const firstByRun = new Map<string, number>();
    let duplicates = 0;
    const perRun = new Map<string, number>();
    for (const list of receipts) {
      duplicates += list.length - 1;
      const first = list[0] as Receipt;
      perRun.set(first.runId, (perRun.get(first.runId) ?? 0) + 1);
      const known = firstByRun.get(first.runId);
      if (known === undefined || first.receivedAt < known) firstByRun.set(first.runId, first.receivedAt);
    }
    // Two deliveries for one run end would be a duplicate as well, even under two delivery ids.
    for (const count of perRun.values()) duplicates += count - 1;
    const lost = ended.filter((r) => !firstByRun.has(r.id)).length;
    const latencies = ended
      .filter((r) => firstByRun.has(r.id))
      .map((r) => (firstByRun.get(r.id) as number) - Date.parse(r.completed_at as string));

    printFigure('webhooks runs ended', ended.length, 'runs', { op: '=', target: RUNS });
    printFigure('webhooks lost deliveries', lost, 'deliveries', { op: '=', target: 0 });
    printFigure('webhooks duplicate deliveries', duplicates, 'deliveries', { op: '=', target: 0 });
    printFigure('webhooks completed_at to receipt p50', percentile(latencies, 50), 'ms');
    printFigure('webhooks completed_at to receipt p99', percentile(latencies, 99), 'ms', { op: '<=', target: 250 });
  } finally {
    await client?.close();
    await crewd?.stop();
    await receiver.close();
    await scratch.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
