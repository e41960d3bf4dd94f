import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { followRun, now } from './lib/crewd-client.js';
import { createScratchDatabase } from './lib/database.js';
import { deployBundle } from './lib/deploy-bundle.js';
import { median, printFigure } from './lib/figures.js';
import { type Json, type JsonTarget, jsonRequest } from './lib/json-request.js';
import { type Proc, startCrewd as startCrewdProcess } from './lib/node-process.js';
import { bundleEnv, startWarm, testVenv, type WarmProcess, writeProjects } from './lib/python-projects.js';

/*
 * `npm run bench -- python`: a one-node LangGraph graph and a one-agent one-task CrewAI crew (a
 * deterministic BaseLLM), each deployed as a bundle version and built by a crewd process on
 * PostgreSQL (BENCH_DATABASE_URL), in the sandbox where bubblewrap works. Runs POST → complete
 * (the event stream's `complete`), median, once the version's fork server serves them, against
 * the same graph's `invoke` and crew's `kickoff()` in a warm Python process, timed in turns with
 * the runs (so that a change in the machine's speed hits both alike). The bundles import
 * crewai and langgraph from the Python test environment (no PyPI); telemetry is off. Then the same
 * runs with fork servers off (PYTHON_FORK_SERVER_IDLE_SECONDS=0), each importing its crew.
 */

const KEY = 'bench-python-admin-key-0123456789';
const GRAPH_RUNS = Number(process.env.PYTHON_GRAPH_RUNS ?? 40);
const CREW_RUNS = Number(process.env.PYTHON_CREW_RUNS ?? 40);
/** Runs without fork servers, each paying the import: fewer, they take seconds. */
const COLD_RUNS = Number(process.env.PYTHON_COLD_RUNS ?? 5);
/** Rounds of warm calls and API runs in turn. */
const TURNS = 4;
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/** The bundles import from the test environment (`venv`): the sandbox shows it to their builds and runs. */
function startCrewd(databaseUrl: string, dataDir: string, venv: string, forkServerIdleSeconds = 600): Promise<Proc> {
  return startCrewdProcess(databaseUrl, dataDir, KEY, {
    RUNNER_EXTRA_PATHS: venv,
    PYTHON_FORK_SERVER_IDLE_SECONDS: String(forkServerIdleSeconds),
  });
}

const target = (server: Proc): JsonTarget => ({ port: server.port, key: KEY, agent });

/** POST → the stream's `complete`, in ms, and the run as stored. */
async function runToComplete(server: Proc, deploymentId: string, input: Json): Promise<{ ms: number; run: Json }> {
  const started = now();
  const created = await jsonRequest(target(server), 'POST', '/v1/runs', { deployment_id: deploymentId, input });
  let complete = false;
  await followRun(target(server), created.run_id, (data) => {
    if (data.startsWith('{"type":"complete"')) complete = true;
  });
  const ms = now() - started;
  const run = await jsonRequest(target(server), 'GET', `/v1/runs/${created.run_id}`);
  if (!complete || run.status !== 'succeeded') throw new Error(`run ${run.id}: ${run.status} ${run.error_message}`);
  return { ms, run };
}

/** Runs until one runs in a child of the version's fork server (the first ones run cold while it imports). */
async function untilForked(server: Proc, deploymentId: string, input: Json, forked: (run: Json) => boolean) {
  for (let attempt = 0; attempt < 60; attempt++) {
    if (forked((await runToComplete(server, deploymentId, input)).run)) return;
    await sleep(500);
  }
  throw new Error('no run went through the fork server');
}

async function samples(server: Proc, deploymentId: string, input: Json, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) times.push((await runToComplete(server, deploymentId, input)).ms);
  return times;
}

/** Median ms of `count` runs through the API and of as many warm calls, in TURNS rounds of each in turn. */
async function inTurns(
  warm: WarmProcess,
  action: 'invoke' | 'kickoff',
  runs: (count: number) => Promise<number[]>,
  count: number,
): Promise<{ api: number; warm: number }> {
  const api: number[] = [];
  const calls: number[] = [];
  const perTurn = Math.ceil(count / TURNS);
  for (let round = 0; round < TURNS; round++) {
    calls.push(...(await warm.times(action, perTurn)));
    api.push(...(await runs(perTurn)));
  }
  return { api: median(api), warm: median(calls) };
}

export async function run(): Promise<void> {
  const venv = testVenv();
  const database = await createScratchDatabase();
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-bench-python-'));
  let server: Proc | null = null;
  let warm: WarmProcess | null = null;
  try {
    const projects = writeProjects(dir, bundleEnv(venv));
    warm = await startWarm(venv, dir);
    server = await startCrewd(database.url, path.join(dir, 'data'), venv);
    const graph = await deployBundle(target(server), 'bench-graph', projects.graph);
    const crew = await deployBundle(target(server), 'bench-crew', projects.crew);

    const graphInput = { text: 'hello' };
    await untilForked(server, graph, graphInput, (run) => run.output?.forked === true);
    const graphRuns = (count: number) => samples(server as Proc, graph, graphInput, count);
    const graphMs = await inTurns(warm, 'invoke', graphRuns, GRAPH_RUNS);
    printFigure('python_graph_run_post_to_complete_ms', graphMs.api, 'ms', { op: '<=', target: 150 });
    printFigure('python_graph_warm_invoke_ms', graphMs.warm, 'ms');
    printFigure('python_graph_run_vs_warm_invoke', graphMs.api / graphMs.warm, 'x');

    const crewInput = { topic: 'bees' };
    await untilForked(server, crew, crewInput, (run) => String(run.output?.raw).includes('forked=True'));
    const crewRuns = (count: number) => samples(server as Proc, crew, crewInput, count);
    const crewMs = await inTurns(warm, 'kickoff', crewRuns, CREW_RUNS);
    printFigure('python_crew_run_post_to_complete_ms', crewMs.api, 'ms');
    printFigure('python_crew_warm_kickoff_ms', crewMs.warm, 'ms');
    // No goal: the throughput issue measures crewd against the official server instead.
    printFigure('python_crew_run_vs_warm_kickoff', crewMs.api / crewMs.warm, 'x');

    // The same versions on the same instance with fork servers off: every run imports its crew.
    await server.stop();
    server = await startCrewd(database.url, path.join(dir, 'data'), venv, 0);
    const coldGraph = median(await samples(server, graph, graphInput, COLD_RUNS));
    printFigure('python_graph_run_without_fork_server_ms', coldGraph, 'ms');
    const coldCrew = median(await samples(server, crew, crewInput, COLD_RUNS));
    printFigure('python_crew_run_without_fork_server_ms', coldCrew, 'ms');
  } finally {
    warm?.stop();
    await server?.stop();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}
