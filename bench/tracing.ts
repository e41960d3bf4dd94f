import { rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { deployCrew, followRun, now } from './lib/crewd-client.js';
import { createScratchDatabase } from './lib/database.js';
import { median, printFigure } from './lib/figures.js';
import { type JsonTarget, jsonRequest } from './lib/json-request.js';
import { timed } from './lib/load.js';
import { type Proc, startCrewd } from './lib/node-process.js';

/*
 * `npm run bench -- tracing` (and the end of `npm run bench -- runs`): what tracing costs a run.
 * Two crewds alike but for OTEL_EXPORTER_OTLP_ENDPOINT, pointed at an OTLP receiver on loopback
 * that reads and drops what it is sent; runs alternate between them so load changes hit both alike.
 * The runs report an LLM call, a task and a tool call, so each run's trace has spans to send.
 */

const KEY = 'bench-tracing-admin-key-0123456789';
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const INPUT = {
  events: [
    { type: 'task.started', data: { task: 'research', agent: 'Researcher' } },
    { type: 'tool_use', data: { tool: 'search', input: 'q', agent: 'Researcher' } },
    { type: 'tool_use', data: { tool: 'search', output: 'r', agent: 'Researcher' } },
    { type: 'llm.call', data: { model: 'gpt-4o-mini', usage: { input_tokens: 100, output_tokens: 20 } } },
    { type: 'task.completed', data: { task: 'research', agent: 'Researcher' } },
  ],
};

interface Crewd {
  proc: Proc;
  target: JsonTarget;
  deploymentId: string;
  stop(): Promise<void>;
}

async function startReceiver(): Promise<{ url: string; spans: () => number; close(): void }> {
  let requests = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      requests++;
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans: () => requests, close: () => server.close() };
}

async function startOne(name: string, settings: Record<string, string>): Promise<Crewd> {
  const scratch = await createScratchDatabase();
  const dataDir = path.join(tmpdir(), `crewd-bench-tracing-${name}-${process.pid}`);
  const proc = await startCrewd(scratch.url, dataDir, KEY, {
    MAX_CONCURRENT_RUNS: '16',
    RUNNER_SANDBOX: 'off',
    ...settings,
  });
  const target = { port: proc.port, key: KEY, agent };
  return {
    proc,
    target,
    deploymentId: await deployCrew(target, 'scripted.mjs'),
    async stop() {
      await proc.stop();
      await scratch.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function runToComplete(crewd: Crewd): Promise<void> {
  const created = await jsonRequest(crewd.target, 'POST', '/v1/runs', {
    deployment_id: crewd.deploymentId,
    input: INPUT,
  });
  let complete = false;
  await followRun(crewd.target, created.run_id, (data) => {
    if (data.startsWith('{"type":"complete"')) complete = true;
  });
  if (!complete) throw new Error(`run ${created.run_id} ended without complete`);
}

async function manyAtOnce(crewd: Crewd, total: number, width: number): Promise<number> {
  let next = 0;
  const start = now();
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next++ < total) await runToComplete(crewd);
    }),
  );
  return now() - start;
}

/** Latency and throughput with tracing on ÷ off; goals from issue 33. */
export async function tracingFigures(): Promise<void> {
  const receiver = await startReceiver();
  const off = await startOne('off', {});
  let on: Crewd | null = null;
  try {
    on = await startOne('on', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    for (let i = 0; i < 10; i++) for (const crewd of [off, on]) await runToComplete(crewd);
    const samples = { off: [] as number[], on: [] as number[] };
    for (let i = 0; i < 100; i++) {
      samples.off.push(await timed(() => runToComplete(off)));
      samples.on.push(await timed(() => runToComplete(on as Crewd)));
    }
    printFigure(
      'run latency with tracing on (OTLP receiver on loopback), POST to complete, median',
      median(samples.on),
      'ms',
    );
    printFigure('run latency with tracing off, median', median(samples.off), 'ms');
    printFigure('run latency ratio (tracing on ÷ off)', median(samples.on) / median(samples.off), 'x', {
      op: '<=',
      target: 1.05,
    });
    const ms = { off: 0, on: 0 };
    for (let round = 0; round < 3; round++) {
      ms.off += await manyAtOnce(off, 100, 8);
      ms.on += await manyAtOnce(on, 100, 8);
    }
    printFigure('throughput with tracing on, 300 runs 8 at a time', (300 / ms.on) * 1000, 'runs/s');
    printFigure('throughput with tracing off, 300 runs 8 at a time', (300 / ms.off) * 1000, 'runs/s');
    printFigure('throughput ratio (tracing on ÷ off)', ms.off / ms.on, 'x', { op: '>=', target: 0.95 });
    if (receiver.spans() === 0) throw new Error('the OTLP receiver got no traces: tracing was not on');
  } finally {
    await on?.stop();
    await off.stop();
    receiver.close();
  }
}

export async function run(): Promise<void> {
  try {
    await tracingFigures();
  } finally {
    agent.destroy();
  }
}
