import { rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { deployCrew } from './lib/crewd-client.js';
import { createScratchDatabase } from './lib/database.js';
import { median, percentile, printFigure } from './lib/figures.js';
import { type JsonTarget, jsonRequest } from './lib/json-request.js';
import { type Proc, startCrewd } from './lib/node-process.js';

/*
 * `npm run bench -- fanout`: how a burst sent to many event streams at once weighs on every other
 * request. 2,000 clients follow one run that writes 1 MB in four events; meanwhile a prober in its
 * own thread (so reading 2 GB of stream data here does not delay it) times GET /healthz every
 * 10 ms. Baseline: the same prober with no stream open, in the same run.
 */

const KEY = 'bench-fanout-admin-key-0123456789';
const CLIENTS = 2000;
const BURST = { count: 4, size: 250_000 };

/** Times GET /healthz every 10 ms in a worker thread until told to stop; answers the latencies in ms. */
const PROBE = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const latencies = [];
let stopping = false;
parentPort.on('message', () => { stopping = true; });
function probe() {
  if (stopping) return parentPort.postMessage(latencies);
  const start = performance.now();
  http.get({ host: '127.0.0.1', port: workerData.port, path: '/healthz', agent }, (res) => {
    res.resume();
    res.on('end', () => {
      latencies.push(performance.now() - start);
      setTimeout(probe, 10);
    });
  }).on('error', () => setTimeout(probe, 10));
}
probe();
`;

function startProbe(port: number): { stop(): Promise<number[]> } {
  const worker = new Worker(PROBE, { eval: true, workerData: { port } });
  return {
    stop: () =>
      new Promise((resolve) => {
        worker.once('message', (latencies: number[]) => {
          void worker.terminate();
          resolve(latencies);
        });
        worker.postMessage('stop');
      }),
  };
}

/** Follows a stream, counting bytes only; resolves at its end with whether `complete` arrived. */
function follow(target: JsonTarget, runId: string, agent: http.Agent, onOpen: () => void): Promise<boolean> {
  return new Promise((resolve, reject) => {
    http
      .get(
        {
          host: '127.0.0.1',
          port: target.port,
          path: `/v1/runs/${runId}/events`,
          agent,
          headers: { authorization: `Bearer ${target.key}` },
        },
        (res) => {
          if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`));
          onOpen();
          let tail = '';
          res.on('data', (chunk: Buffer) => {
            tail = (tail + chunk.subarray(-200).toString('latin1')).slice(-200);
          });
          res.on('end', () => resolve(tail.includes('"type":"complete"')));
          res.on('error', reject);
        },
      )
      .on('error', reject);
  });
}

async function runCrewWithClients(server: Proc, target: JsonTarget, crew: string, clients: number) {
  const created = await jsonRequest(target, 'POST', '/v1/runs', {
    deployment_id: crew,
    input: { mode: 'big_events', ...BURST, delay_ms: 1000 + clients * 6 },
  });
  const agent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  let opened = 0;
  const streams: Promise<boolean>[] = [];
  for (let c = 0; c < clients; c++) {
    streams.push(follow(target, created.run_id, agent, () => opened++));
    if (c % 100 === 99) await sleep(100);
  }
  while (opened < clients) await sleep(20);
  const probe = startProbe(server.port);
  const completes = (await Promise.all(streams)).filter(Boolean).length;
  const latencies = await probe.stop();
  agent.destroy();
  if (completes !== clients) throw new Error(`fan-out: ${completes} of ${clients} streams completed`);
  return latencies;
}

export async function run(): Promise<void> {
  const scratch = await createScratchDatabase();
  const dataDir = path.join(tmpdir(), `crewd-bench-fanout-${process.pid}`);
  let server: Proc | null = null;
  try {
    server = await startCrewd(scratch.url, dataDir, KEY, { MAX_EVENT_STREAMS_PER_KEY: String(CLIENTS) });
    const target: JsonTarget = { port: server.port, key: KEY, agent: new http.Agent({ keepAlive: true }) };
    const crew = await deployCrew(target, 'large-output.mjs');

    const idleProbe = startProbe(server.port);
    await sleep(3000);
    const idle = await idleProbe.stop();

    await server.collectGarbage();
    const rssBefore = server.rssKb();
    const burst = await runCrewWithClients(server, target, crew, CLIENTS);
    await sleep(1000);
    await server.collectGarbage();
    const rssAfter = server.rssKb();

    printFigure('healthz latency idle, p99', percentile(idle, 99), 'ms');
    printFigure('healthz latency idle, max', Math.max(...idle), 'ms');
    printFigure(`healthz latency during a 1 MB burst to ${CLIENTS} streams, median`, median(burst), 'ms');
    printFigure(`healthz latency during a 1 MB burst to ${CLIENTS} streams, max`, Math.max(...burst), 'ms', {
      op: '<=',
      target: 250,
    });
    printFigure('healthz worst latency ratio (burst ÷ idle)', Math.max(...burst) / Math.max(...idle), 'x');
    printFigure(`memory kept after ${CLIENTS} streams closed (RSS growth)`, (rssAfter - rssBefore) / 1024, 'MB', {
      op: '<=',
      target: 100,
    });
    target.agent.destroy();
  } finally {
    await server?.stop();
    await scratch.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
