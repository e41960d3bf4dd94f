import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { deployCrew, followRun } from './lib/crewd-client.js';
import { createScratchDatabase } from './lib/database.js';
import { printFigure } from './lib/figures.js';
import { type Json, type JsonTarget, jsonRequest } from './lib/json-request.js';
import { throughput } from './lib/load.js';
import { type Proc, startCrewd as startCrewdProcess, startProcess } from './lib/node-process.js';

/*
 * `npm run bench -- scale`: crewd on PostgreSQL as real processes (so their memory is read alone),
 * this process the client. (a) GET /v1/runs/{id} over 50 connections against a bare Fastify route
 * answering the same JSON from memory, both measured in this run. (b) A mixed load over two
 * instances on one database for SCALE_MIXED_SECONDS (default 600): runs, streams opened on the
 * other instance, table queries, webhook deliveries; errors counted, RSS at the start and the end.
 */

const KEY = 'bench-scale-admin-key-0123456789';
const CONNECTIONS = 50;
const RPS_SECONDS = Number(process.env.SCALE_RPS_SECONDS ?? 8);
const MIXED_SECONDS = Number(process.env.SCALE_MIXED_SECONDS ?? 600);

function startCrewd(databaseUrl: string, dataDir: string): Promise<Proc> {
  return startCrewdProcess(databaseUrl, dataDir, KEY, {
    MAX_CONCURRENT_RUNS: '16',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    INSTANCE_LEASE_SECONDS: '10',
  });
}

/** The baseline: Fastify with one route answering `body` (parsed once) from memory. */
function startBare(body: string): Promise<Proc> {
  const script = `
    import Fastify from 'fastify';
    const run = JSON.parse(process.env.BODY);
    const app = Fastify({ logger: false });
    app.get('/v1/runs/:id', async () => run);
    app.get('/ready', async () => ({ ok: true }));
    await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
  `;
  return startProcess(['--input-type=module', '-e', script], { BODY: body }, '/ready');
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** One JSON request; rejects on any status other than `expect`. */
const target = (server: Proc): JsonTarget => ({ port: server.port, key: KEY, agent });
const request = (server: Proc, method: string, url: string, body?: unknown, expect?: number): Promise<Json> =>
  jsonRequest(target(server), method, url, body, expect);

/** Requests per second of GET `url` over CONNECTIONS kept-alive connections for `seconds`. */
async function hammer(base: string, url: string, seconds: number): Promise<number> {
  const pool = new Pool(base, { connections: CONNECTIONS, pipelining: 1 });
  const headers = { authorization: `Bearer ${KEY}` };
  const get = async () => {
    const response = await pool.request({ path: url, method: 'GET', headers });
    await response.body.text();
    if (response.statusCode !== 200) throw new Error(`GET ${url}: ${response.statusCode}`);
  };
  try {
    return await throughput(get, CONNECTIONS, seconds);
  } finally {
    await pool.close();
  }
}

async function getRunThroughput(server: Proc, trivial: string): Promise<void> {
  const created = await request(server, 'POST', '/v1/runs', { deployment_id: trivial, input: { hello: 'world' } }, 202);
  let body = '';
  for (;;) {
    const run = await request(server, 'GET', `/v1/runs/${created.run_id}`);
    body = JSON.stringify(run);
    if (run.status === 'succeeded') break;
    await sleep(50);
  }
  const bare = await startBare(body);
  try {
    const url = `/v1/runs/${created.run_id}`;
    await hammer(server.base, url, 2);
    await hammer(bare.base, url, 2);
    // Alternated, so a slow moment of the machine falls on both sides.
    let crewd = 0;
    let baseline = 0;
    for (let round = 0; round < 2; round++) {
      crewd += await hammer(server.base, url, RPS_SECONDS);
      baseline += await hammer(bare.base, url, RPS_SECONDS);
    }
    crewd /= 2;
    baseline /= 2;
    printFigure('scale.get_run_rps', Math.round(crewd), 'requests/s');
    printFigure('scale.get_run_bare_fastify_rps', Math.round(baseline), 'requests/s');
    printFigure('scale.get_run_rps_ratio', crewd / baseline, 'ratio', { op: '>=', target: 0.35 });
  } finally {
    await bare.stop();
  }
}

/** A webhook receiver in this process, counting deliveries by their id. */
async function startReceiver(): Promise<{ url: string; seen: Map<string, number>; close(): Promise<void> }> {
  const seen = new Map<string, number>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['x-service-delivery'] ?? '');
      seen.set(id, (seen.get(id) ?? 0) + 1);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function mixedLoad(a: Proc, b: Proc): Promise<void> {
  const instances = [a, b];
  const receiver = await startReceiver();
  const trivial = await deployCrew(target(a), 'trivial.mjs');
  const timed = await deployCrew(target(a), 'timed-events.mjs');
  await request(a, 'POST', '/v1/webhooks', {
    deployment_id: trivial,
    name: 'bench',
    url: receiver.url,
    events: ['run.succeeded', 'run.failed'],
  });
  const table = await request(a, 'POST', '/v1/tables', {
    name: 'scale',
    columns: [
      { name: 'title', type: 'text' },
      { name: 'score', type: 'number' },
      { name: 'stage', type: 'select', options: ['lead', 'won', 'lost'] },
    ],
  });

  let errors = 0;
  let requests = 0;
  let deliveriesExpected = 0;
  let running = true;
  const fail = (error: unknown) => {
    errors++;
    if (errors <= 5) process.stderr.write(`mixed load error: ${error instanceof Error ? error.message : error}\n`);
  };
  const loop = (task: (i: number) => Promise<void>) =>
    (async () => {
      for (let i = 0; running; i++) {
        try {
          await task(i);
        } catch (error) {
          fail(error);
        }
      }
    })();

  const workers = [
    // Runs with a webhook: each run ending makes one delivery.
    ...[0, 1].map((w) =>
      loop(async (i) => {
        const server = instances[(i + w) % 2] as Proc;
        await request(server, 'POST', '/v1/runs', { deployment_id: trivial, input: { i } }, 202);
        requests++;
        deliveriesExpected++;
        await sleep(100);
      }),
    ),
    // Streams opened on the other instance than the one the run started on.
    ...[0, 1].map((w) =>
      loop(async (i) => {
        const [starter, reader] = (i + w) % 2 === 0 ? [a, b] : [b, a];
        const run = await request(
          starter,
          'POST',
          '/v1/runs',
          { deployment_id: timed, input: { count: 30, interval_ms: 10 } },
          202,
        );
        const data: Json[] = [];
        await followRun(target(reader), run.run_id, (text) => data.push(JSON.parse(text)));
        requests += 2;
        const ticks = data.filter((item) => item.type === 'tick').length;
        const last = data.at(-1);
        if (ticks !== 30 || last?.type !== 'complete' || last.status !== 'succeeded')
          throw new Error(`stream of ${run.run_id}: ${ticks} ticks, ended with ${JSON.stringify(last)}`);
      }),
    ),
    // Table writes and filtered queries; the table is emptied now and then so it stays small.
    loop(async (i) => {
      const server = instances[i % 2] as Proc;
      const rows = Array.from({ length: 20 }, (_, k) => ({
        title: `row ${i}-${k}`,
        score: (i * 20 + k) % 1000,
        stage: ['lead', 'won', 'lost'][k % 3],
      }));
      await request(server, 'POST', `/v1/tables/${table.id}/rows`, rows, 201);
      await request(server, 'POST', `/v1/tables/${table.id}/query`, {
        filter: {
          and: [
            { column: 'stage', operator: 'eq', value: 'won' },
            { column: 'score', operator: 'gte', value: 500 },
          ],
        },
        sort_by: 'score',
        sort_direction: 'desc',
        limit: 50,
      });
      requests += 2;
      if (i % 50 === 49) {
        await request(server, 'DELETE', `/v1/tables/${table.id}/rows`, { filter: { and: [] } });
        requests++;
      }
      await sleep(20);
    }),
    // Reads of runs by id.
    loop(async (i) => {
      const server = instances[i % 2] as Proc;
      const list = await request(server, 'GET', '/v1/runs?limit=5');
      for (const run of list.runs ?? []) await request(server, 'GET', `/v1/runs/${run.id}`);
      requests += 1 + (list.runs?.length ?? 0);
      await sleep(20);
    }),
  ];

  // Warm up before the first memory reading: code paths compiled, pools filled.
  const warmup = Math.min(30, Math.max(5, MIXED_SECONDS / 10));
  await sleep(warmup * 1000);
  for (const server of instances) await server.collectGarbage();
  const rssStart = instances.map((server) => server.rssKb());
  await sleep(Math.max(0, MIXED_SECONDS - warmup) * 1000);
  running = false;
  await Promise.all(workers);

  // Every delivery goes out once.
  const deadline = Date.now() + 60_000;
  while (receiver.seen.size < deliveriesExpected && Date.now() < deadline) await sleep(200);
  const missing = Math.max(0, deliveriesExpected - receiver.seen.size);
  const doubled = [...receiver.seen.values()].filter((count) => count > 1).length;
  if (missing > 0) fail(new Error(`${missing} deliveries never arrived`));
  if (doubled > 0) fail(new Error(`${doubled} deliveries arrived more than once`));
  await receiver.close();

  await sleep(2000);
  for (const server of instances) await server.collectGarbage();
  const rssEnd = instances.map((server) => server.rssKb());
  const growth = Math.max(
    ...rssEnd.map((end, index) => ((end - (rssStart[index] as number)) / (rssStart[index] as number)) * 100),
  );
  const label = `scale.mixed_${MIXED_SECONDS}s`;
  printFigure(`${label}_requests`, requests, 'requests');
  printFigure(`${label}_deliveries`, receiver.seen.size, 'deliveries');
  printFigure(`${label}_errors`, errors, 'errors', { op: '=', target: 0 });
  rssStart.forEach((kb, index) => {
    const name = index === 0 ? 'a' : 'b';
    printFigure(`${label}_rss_start_${name}`, Math.round(kb / 1024), 'MB');
    printFigure(`${label}_rss_end_${name}`, Math.round((rssEnd[index] as number) / 1024), 'MB');
  });
  printFigure(`${label}_rss_growth`, growth, '% (largest of the two instances)', { op: '<=', target: 10 });
}

export async function run(): Promise<void> {
  const database = await createScratchDatabase();
  const dirs = [mkdtempSync(path.join(tmpdir(), 'crewd-scale-a-')), mkdtempSync(path.join(tmpdir(), 'crewd-scale-b-'))];
  const servers: Proc[] = [];
  try {
    // The first instance migrates and bootstraps; the second then joins the same database.
    servers.push(await startCrewd(database.url, dirs[0] as string));
    servers.push(await startCrewd(database.url, dirs[1] as string));
    const [a, b] = servers as [Proc, Proc];
    const trivial = await deployCrew(target(a), 'trivial.mjs');
    await getRunThroughput(a, trivial);
    await mixedLoad(a, b);
  } finally {
    for (const server of servers) await server.stop().catch(() => {});
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await database.drop();
  }
}
