import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { followRun } from './crewd-client.js';
import { percentile, printFigure } from './figures.js';
import { type JsonTarget, jsonRequest } from './json-request.js';
import type { Proc } from './node-process.js';

/*
 * The runs bench's stream figures (`npm run bench -- runs`, not with RUNS_BENCH_QUICK=1): how fast
 * a run's events reach one SSE client, and what 1000 clients of one run cost. `timed` is a
 * deployment of examples/crews/timed-events.mjs on `server`.
 */

/** Event relay: 1000 events of one run, runner write to SSE client. */
export async function relayFigures(target: JsonTarget, timed: string): Promise<void> {
  const created = await jsonRequest(target, 'POST', '/v1/runs', {
    deployment_id: timed,
    input: { count: 1000, interval_ms: 2, start_delay_ms: 200 },
  });
  const delays: number[] = [];
  await followRun(target, created.run_id, (data, arrivedAt) => {
    if (!data.startsWith('{"type":"tick"')) return;
    const t = Number(/"t":([\d.]+)/.exec(data)?.[1]);
    delays.push(arrivedAt - t);
  });
  if (delays.length !== 1000) throw new Error(`relay: got ${delays.length} of 1000 events`);
  printFigure('relay latency p50 (runner write to SSE client)', percentile(delays, 50), 'ms');
  printFigure('relay latency p99 (runner write to SSE client)', percentile(delays, 99), 'ms', { op: '<=', target: 5 });
}

async function crewDuration(target: JsonTarget, runId: string): Promise<number> {
  for (;;) {
    const run = await jsonRequest(target, 'GET', `/v1/runs/${runId}`);
    if (run.status === 'succeeded') return run.output.elapsed_ms as number;
    if (run.status !== 'running' && run.status !== 'pending') throw new Error(`run ${runId} ${run.status}`);
    await sleep(100);
  }
}

/** Fan-out: 1000 clients follow one run of 1000 events; latency, order, the crew's slowdown and memory per stream. */
export async function fanOutFigures(server: Proc, target: JsonTarget, timed: string): Promise<void> {
  const CLIENTS = 1000;
  const EVENTS = 1000;
  const input = { count: EVENTS, interval_ms: 10 };

  // The crew alone, nobody watching.
  const alone = await jsonRequest(target, 'POST', '/v1/runs', { deployment_id: timed, input });
  const aloneMs = await crewDuration(target, alone.run_id);

  await server.collectGarbage();
  const rssBefore = server.rssKb();
  const created = await jsonRequest(target, 'POST', '/v1/runs', {
    deployment_id: timed,
    input: { ...input, start_delay_ms: 6000 },
  });
  const streamAgent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const delays = new Float64Array(CLIENTS * EVENTS);
  let received = 0;
  let outOfOrder = 0;
  let completes = 0;
  let opened = 0;
  let rssOpen = 0;
  const streams: Promise<void>[] = [];
  for (let c = 0; c < CLIENTS; c++) {
    let expected = 1;
    streams.push(
      followRun(
        target,
        created.run_id,
        (data, arrivedAt) => {
          if (data.startsWith('{"type":"tick"')) {
            const match = /"i":(\d+),"t":([\d.]+)/.exec(data);
            const i = Number(match?.[1]);
            if (i !== expected) outOfOrder++;
            expected = i + 1;
            delays[received++] = arrivedAt - Number(match?.[2]);
          } else if (data.startsWith('{"type":"complete"')) {
            completes++;
            if (expected !== EVENTS + 1) outOfOrder++;
          }
        },
        {
          agent: streamAgent,
          onOpen: () => {
            opened++;
          },
        },
      ),
    );
    if (c % 100 === 99) await sleep(50);
  }
  while (opened < CLIENTS) await sleep(20);
  await server.collectGarbage();
  rssOpen = server.rssKb();
  await Promise.all(streams);
  const watchedMs = await crewDuration(target, created.run_id);
  await sleep(1000);
  await server.collectGarbage();
  const rssAfter = server.rssKb();

  if (completes !== CLIENTS) throw new Error(`fan-out: ${completes} of ${CLIENTS} streams completed`);
  const all = Array.from(delays.subarray(0, received));
  printFigure('fan-out events delivered (1000 clients x 1000 events)', received, 'events', {
    op: '=',
    target: CLIENTS * EVENTS,
  });
  printFigure('fan-out events out of order or missing', outOfOrder, 'events', { op: '=', target: 0 });
  printFigure('fan-out latency p50', percentile(all, 50), 'ms');
  printFigure('fan-out latency p99', percentile(all, 99), 'ms', { op: '<=', target: 100 });
  printFigure('fan-out crew duration, no client', aloneMs, 'ms');
  printFigure('fan-out crew duration, 1000 clients', watchedMs, 'ms');
  printFigure('fan-out crew slowdown (1000 clients ÷ none)', watchedMs / aloneMs, 'x', { op: '<=', target: 1.2 });
  printFigure('fan-out memory per open stream (RSS growth ÷ streams)', (rssOpen - rssBefore) / CLIENTS, 'KB', {
    op: '<=',
    target: 50,
  });
  printFigure(
    'fan-out memory kept after the streams closed (RSS growth ÷ streams)',
    (rssAfter - rssBefore) / CLIENTS,
    'KB',
    {
      op: '<=',
      target: 10,
    },
  );
  streamAgent.destroy();
}
