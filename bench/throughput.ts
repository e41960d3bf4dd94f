import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuByPart, perRun, processPartOf, SERVICE, treeCpuMs } from './lib/cpu.js';
import { now } from './lib/crewd-client.js';
import { createScratchDatabase } from './lib/database.js';
import { deployBundle } from './lib/deploy-bundle.js';
import { median, printFigure } from './lib/figures.js';
import { type Json, type JsonTarget, jsonRequest } from './lib/json-request.js';
import { type Proc, startCrewd } from './lib/node-process.js';
import { profileDuring } from './lib/node-profile.js';
import { type Peer, startPeer } from './lib/peer-server.js';
import { treeMemory } from './lib/process-tree.js';
import { bundleEnv, testVenv, writeProjects } from './lib/python-projects.js';

/*
 * `npm run bench -- throughput`: crewd against the official LangGraph server (`langgraph dev`, from
 * `langgraph-cli[inmem]`, installed into a venv of the bench's own) on the same one-node graph, asked the same
 * way (POST /runs/wait with the graph's name as assistant, crewd's LangGraph API under /langgraph), in turns in
 * the same run: CLIENTS clients sharing RUNS runs, and runs one at a time. crewd runs on PostgreSQL
 * (BENCH_DATABASE_URL) with its default isolation, a sandboxed child per run forked by the version's fork server,
 * and, in the same turns, a second crewd (its own database) with RUN_ISOLATION=deployment: the version's runs in its
 * warm sandboxed worker, RUN_WORKER_CONCURRENCY (8) at a time.
 * Then 19 more deployments of the same environment, each run until forked, and the memory of crewd's process
 * tree per active deployment. Where the peer cannot be installed or started, its figures are skipped with a line
 * saying why. The figures are as good as the machine is quiet: run it on an idle one.
 */

const KEY = 'bench-throughput-admin-key-0123456789';
const CLIENTS = Number(process.env.THROUGHPUT_CLIENTS ?? 8);
const RUNS = Number(process.env.THROUGHPUT_RUNS ?? 300);
const SINGLE_RUNS = Number(process.env.THROUGHPUT_SINGLE_RUNS ?? 20);
const DEPLOYMENTS = Number(process.env.THROUGHPUT_DEPLOYMENTS ?? 20);
/** Rounds of crewd and the peer in turn, so that a change in the machine's load hits both alike. */
const TURNS = 2;
const GRAPH = 'echo';
const INPUT = { text: 'hello' };

const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
const crewdTarget = (server: Proc): JsonTarget => ({ port: server.port, key: KEY, agent });

/** Asks one run the official way and checks its output; resolves with its ms and the output. */
type WaitRun = () => Promise<{ ms: number; output: Json }>;

function waitRun(target: JsonTarget, prefix: string): WaitRun {
  return async () => {
    const started = now();
    const output = await jsonRequest(target, 'POST', `${prefix}/runs/wait`, { assistant_id: GRAPH, input: INPUT });
    if (output?.text !== INPUT.text) throw new Error(`${prefix}/runs/wait answered ${JSON.stringify(output)}`);
    return { ms: now() - started, output };
  };
}

/**
 * Runs of deployment `id` until one runs in a child of its fork server (the first run while it imports), or with
 * `warm: 'in_worker'` in its worker.
 */
async function untilForked(server: Proc, id: string, warm: 'forked' | 'in_worker' = 'forked'): Promise<void> {
  for (let attempt = 0; attempt < 120; attempt++) {
    const created = await jsonRequest(crewdTarget(server), 'POST', '/v1/runs', { deployment_id: id, input: INPUT });
    for (;;) {
      const run = await jsonRequest(crewdTarget(server), 'GET', `/v1/runs/${created.run_id}`);
      if (run.status === 'succeeded' && run.output?.[warm] === true) return;
      if (['succeeded', 'failed', 'canceled', 'timed_out'].includes(run.status)) break;
      await sleep(50);
    }
    await sleep(250);
  }
  throw new Error(`no run of deployment ${id} went through its fork server`);
}

/** `count` runs shared by CLIENTS clients; resolves with the seconds they took. */
async function burst(run: WaitRun, count: number): Promise<number> {
  let next = 0;
  const started = now();
  const client = async () => {
    while (next < count) {
      next += 1;
      await run();
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
  return (now() - started) / 1000;
}

interface Measured {
  runsPerSecond: number;
  singleMedianMs: number;
}

/** Each server's throughput and one-at-a-time median, measured in TURNS rounds of each in turn. */
async function inTurns(servers: Array<{ name: string; run: WaitRun }>): Promise<Map<string, Measured>> {
  const seconds = new Map<string, number>();
  const singles = new Map<string, number[]>();
  for (let round = 0; round < TURNS; round++) {
    for (const { name, run } of servers) {
      seconds.set(name, (seconds.get(name) ?? 0) + (await burst(run, RUNS / TURNS)));
      const times = singles.get(name) ?? [];
      for (let i = 0; i < SINGLE_RUNS / TURNS; i++) times.push((await run()).ms);
      singles.set(name, times);
    }
  }
  const measured = new Map<string, Measured>();
  for (const { name } of servers) {
    measured.set(name, {
      runsPerSecond: RUNS / (seconds.get(name) as number),
      singleMedianMs: median(singles.get(name) as number[]),
    });
  }
  return measured;
}

function printTable(title: string, msPerRun: Map<string, number>): void {
  const rows = [...msPerRun].filter(([, ms]) => ms >= 0.05).sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((sum, [, ms]) => sum + ms, 0);
  process.stdout.write(`${title}\n`);
  for (const [part, ms] of rows) process.stdout.write(`  ${ms.toFixed(2).padStart(8)} ms  ${part}\n`);
  process.stdout.write(`  ${total.toFixed(2).padStart(8)} ms  in all\n`);
}

/**
 * Where a run's CPU goes under the load of CLIENTS clients: ms per run by process of crewd's tree and the
 * PostgreSQL backends of its database, and within the service's main thread by what its sampled code is.
 * `title` names the isolation; `figure` is the name of the total's figure.
 */
async function cpuPerRun(
  server: Proc,
  databaseUrl: string,
  run: WaitRun,
  title: string,
  figure: string,
): Promise<void> {
  // CPU is read over a burst of its own: the sampling profiler's cost would count in the service's CPU.
  const before = await cpuByPart(server.child.pid as number, databaseUrl);
  await burst(run, RUNS);
  const after = await cpuByPart(server.child.pid as number, databaseUrl);
  const byProcess = perRun(before, after, RUNS);
  const inService = await profileDuring(server.inspectorPort, async () => {
    await burst(run, RUNS);
  });
  printTable(`${title}CPU per run by process, ${CLIENTS} clients, ${RUNS} runs:`, byProcess);
  // Samples under load count time the thread waited for a core too: each part gets its share of the measured CPU.
  const sampled = [...inService.values()].reduce((sum, ms) => sum + ms, 0);
  const serviceMs = byProcess.get(SERVICE) ?? 0;
  printTable(
    `${title}the service's CPU per run by code (the sampling profiler's shares of its measured CPU):`,
    new Map([...inService].map(([part, ms]) => [part, (ms / sampled) * serviceMs])),
  );
  const total = [...byProcess.values()].reduce((sum, ms) => sum + ms, 0);
  printFigure(figure, total, 'ms');
}

/** DEPLOYMENTS active deployments of the graph's environment (the first one exists); the tree's memory per one. */
async function memoryPerDeployment(server: Proc, project: string, first: string): Promise<void> {
  const ids = [first];
  while (ids.length < DEPLOYMENTS) {
    const batch = Array.from({ length: Math.min(4, DEPLOYMENTS - ids.length) }, (_, i) =>
      deployBundle(crewdTarget(server), `${GRAPH}-${ids.length + i + 1}`, project),
    );
    ids.push(...(await Promise.all(batch)));
  }
  for (const id of ids) await untilForked(server, id);
  const root = server.child.pid as number;
  const tree = treeMemory(root, (pid) => processPartOf(pid, root));
  process.stdout.write(
    `crewd tree with ${DEPLOYMENTS} active deployments: ${tree.processes} processes, ` +
      `${tree.pssMb.toFixed(0)} MB PSS, ${tree.rssMb.toFixed(0)} MB RSS summed\n`,
  );
  for (const [part, mb] of tree.pssMbByPart) process.stdout.write(`  ${mb.toFixed(0).padStart(6)} MB PSS  ${part}\n`);
  printFigure('throughput_tree_memory_per_active_deployment_mb', tree.pssMb / DEPLOYMENTS, 'MB', {
    op: '<=',
    target: 30,
  });
  printFigure('throughput_tree_rss_sum_per_active_deployment_mb', tree.rssMb / DEPLOYMENTS, 'MB');
}

/** The figures are as good as the machine is quiet: the load it had is printed beside them. */
function printLoad(when: string): void {
  const [one, five] = loadavg();
  process.stdout.write(`load average ${when}: ${one?.toFixed(1)} (1 min), ${five?.toFixed(1)} (5 min)\n`);
}

export async function run(): Promise<void> {
  printLoad('at the start');
  const venv = testVenv();
  const database = await createScratchDatabase();
  const workersDatabase = await createScratchDatabase();
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-bench-throughput-'));
  let server: Proc | null = null;
  let workers: Proc | null = null;
  let peer: Peer | null = null;
  try {
    const projects = writeProjects(dir, bundleEnv(venv));
    const settings = { RUNNER_EXTRA_PATHS: venv, PYTHON_FORK_SERVER_IDLE_SECONDS: '600' };
    server = await startCrewd(database.url, path.join(dir, 'data'), KEY, settings);
    const idle = treeMemory(server.child.pid as number);
    const first = await deployBundle(crewdTarget(server), GRAPH, projects.graph);
    await untilForked(server, first);
    workers = await startCrewd(workersDatabase.url, path.join(dir, 'data-workers'), KEY, {
      ...settings,
      RUN_ISOLATION: 'deployment',
    });
    await untilForked(workers, await deployBundle(crewdTarget(workers), GRAPH, projects.graph), 'in_worker');
    peer = await startPeer(path.join(dir, 'peer'), projects.graph, 'graph.py:graph', GRAPH, venv);

    const crewdRun = waitRun(crewdTarget(server), '/langgraph');
    const workersRun = waitRun(crewdTarget(workers), '/langgraph');
    const servers = [
      { name: 'crewd', run: crewdRun },
      { name: 'crewd-deployment', run: workersRun },
    ];
    if (peer) servers.push({ name: 'peer', run: waitRun(peer.target, '') });
    for (const { run: once } of servers) await once(); // each answers once before it is timed
    const measured = await inTurns(servers);
    const crewd = measured.get('crewd') as Measured;
    printFigure('throughput_crewd_runs_per_second', crewd.runsPerSecond, 'runs/s');
    printFigure('throughput_crewd_single_run_median_ms', crewd.singleMedianMs, 'ms');
    const deployment = measured.get('crewd-deployment') as Measured;
    printFigure('throughput_crewd_deployment_isolation_runs_per_second', deployment.runsPerSecond, 'runs/s');
    printFigure('throughput_crewd_deployment_isolation_single_run_median_ms', deployment.singleMedianMs, 'ms');
    const other = measured.get('peer');
    if (other && peer) {
      const peerTree = treeMemory(peer.pid);
      printFigure('throughput_peer_runs_per_second', other.runsPerSecond, 'runs/s');
      printFigure('throughput_peer_single_run_median_ms', other.singleMedianMs, 'ms');
      printFigure('throughput_peer_tree_memory_mb', peerTree.pssMb, 'MB');
      printFigure('throughput_run_isolation_vs_peer', crewd.runsPerSecond / other.runsPerSecond, 'x', {
        op: '>=',
        target: 1,
      });
      printFigure('throughput_single_run_vs_peer', crewd.singleMedianMs / other.singleMedianMs, 'x', {
        op: '<=',
        target: 0.1,
      });
      printFigure('throughput_deployment_isolation_vs_peer', deployment.runsPerSecond / other.runsPerSecond, 'x', {
        op: '>=',
        target: 2,
      });
    }
    if (peer) {
      // The peer's CPU per run under the same load, for the table's comparison (its tree: the server and workers).
      const before = treeCpuMs(peer.pid);
      await burst(waitRun(peer.target, ''), RUNS);
      printFigure('throughput_peer_cpu_per_run_ms', (treeCpuMs(peer.pid) - before) / RUNS, 'ms');
    }
    await peer?.stop();
    peer = null;
    await cpuPerRun(
      workers,
      workersDatabase.url,
      workersRun,
      'RUN_ISOLATION=deployment: ',
      'throughput_deployment_isolation_cpu_per_run_ms',
    );
    await workers.stop();
    workers = null;
    await cpuPerRun(server, database.url, crewdRun, 'RUN_ISOLATION=run: ', 'throughput_cpu_per_run_ms');

    printFigure('throughput_crewd_idle_tree_memory_mb', idle.pssMb, 'MB');
    await memoryPerDeployment(server, projects.graph, first);
    printLoad('at the end');
  } finally {
    await peer?.stop();
    await workers?.stop();
    await server?.stop();
    await workersDatabase.drop();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}
