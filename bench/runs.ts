import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { createBubblewrapSandbox } from '../src/sandbox/bubblewrap.js';
import type { Sandbox } from '../src/sandbox/index.js';
import { probeBubblewrap, probeIsolatedNetwork } from '../src/sandbox/probe.js';
import { CREWS, deployCrew, followRun, now } from './lib/crewd-client.js';
import { createScratchDatabase } from './lib/database.js';
import { median, printFigure } from './lib/figures.js';
import { type Json, type JsonTarget, jsonRequest } from './lib/json-request.js';
import { type Proc, startCrewd as startCrewdProcess } from './lib/node-process.js';
import { fanOutFigures, relayFigures } from './lib/run-stream-figures.js';
import { tracingFigures } from './tracing.js';

/*
 * `npm run bench -- runs`: the run path end to end on PostgreSQL, each figure against a baseline
 * measured in the same run. crewd runs as its own process (src/server.ts), so its memory can be
 * read alone; this process is the client, over real sockets. Runners run in the bubblewrap sandbox
 * (RUNNER_SANDBOX=on) with a network of their own (RUNNER_NETWORK=isolated); crewds with plain
 * runners measure what the sandbox costs, and one with the host's network (on) what isolation costs.
 */

const KEY = 'bench-runs-admin-key-0123456789';
const RUNNER_VARS = ['CREWD_RUN_ID', 'CREWD_DEPLOYMENT_ID', 'CREWD_VERSION_ID', 'CREWD_THREAD_ID'];
/** The baseline spawns' working folder (crewd gives each run a scratch folder of its own). */
const BASELINE_FOLDER = mkdtempSync(path.join(tmpdir(), 'crewd-bench-baseline-'));

type Server = Proc;

/** How a crewd of the bench runs its runners. */
interface Runners {
  sandbox: 'on' | 'off';
  spawner: 'helper' | 'direct';
  network: 'isolated' | 'on';
}

const ISOLATED: Runners = { sandbox: 'on', spawner: 'helper', network: 'isolated' };

function startServer(databaseUrl: string, dataDir: string, runners: Runners): Promise<Server> {
  return startCrewdProcess(databaseUrl, dataDir, KEY, {
    MAX_CONCURRENT_RUNS: '16',
    RUNNER_SANDBOX: runners.sandbox,
    RUNNER_SPAWNER: runners.spawner,
    ...(runners.sandbox === 'on' ? { RUNNER_NETWORK: runners.network } : {}),
  });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** One JSON request over a kept-alive socket; rejects on a 4xx or 5xx. */
const target = (server: Server): JsonTarget => ({ port: server.port, key: KEY, agent });
const request = (server: Server, method: string, url: string, body?: unknown): Promise<Json> =>
  jsonRequest(target(server), method, url, body);

/**
 * The baseline: the same command spawned straight from Node, input on stdin, until it exits. With
 * `sandbox`, the command is wrapped as crewd wraps a run's (bwrap, a scratch folder of its own).
 */
function spawnCrew(file: string, input: Record<string, unknown>, sandbox?: Sandbox): Promise<void> {
  return new Promise((resolve, reject) => {
    // The environment a runner gets (not this process's, which carries tsx in NODE_OPTIONS).
    const env = { PATH: process.env.PATH ?? '', ...Object.fromEntries(RUNNER_VARS.map((name) => [name, 'baseline'])) };
    const plain = { command: [process.execPath, path.join(CREWS, file)], cwd: BASELINE_FOLDER, env };
    const plan = sandbox
      ? sandbox.wrap(plain, { writable: [BASELINE_FOLDER], readOnly: [] })
      : { ...plain, line: null };
    const [program = '', ...args] = plan.command;
    const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'], env: plan.env, cwd: plan.cwd });
    child.stdout.resume();
    child.stderr.resume();
    child.once('error', reject);
    child.once('close', () => resolve());
    const stdin = JSON.stringify({ run_id: 'baseline', input, thread: null });
    // The sandbox's line first, as crewd's launcher writes it.
    child.stdin.end(plan.line === null ? stdin : `${plan.line}\n${stdin}`);
  });
}

async function runToComplete(server: Server, deploymentId: string, input: Record<string, unknown>): Promise<void> {
  const created = await request(server, 'POST', '/v1/runs', { deployment_id: deploymentId, input });
  let complete = false;
  await followRun(target(server), created.run_id, (data) => {
    if (data.startsWith('{"type":"complete"')) complete = true;
  });
  if (!complete) throw new Error(`run ${created.run_id} ended without complete`);
}

async function inParallel(total: number, width: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < total) await task(next++);
    }),
  );
}

interface Deployed {
  server: Server;
  trivial: string;
}

/** One latency sample: POST to complete through a crewd, or a direct spawn to exit when `through` is null. */
/** Through a crewd, or (null) a direct spawn of the crew, in `sandbox` when given. */
async function sampleLatency(
  through: Deployed | null,
  input: Record<string, unknown>,
  sandbox?: Sandbox,
): Promise<number> {
  const start = now();
  if (through) await runToComplete(through.server, through.trivial, input);
  else await spawnCrew('trivial.mjs', input, sandbox);
  return now() - start;
}

/** The crewds compared: sandboxed and isolated, sandboxed on the host's network, plain (helper), plain (direct). */
interface Crewds {
  sandboxed: Deployed;
  hostNetwork: Deployed;
  plain: Deployed;
  plainDirect: Deployed;
}

/**
 * Runs through each crewd and direct spawns, in turn, so load changes hit all alike.
 */
async function latency(
  { sandboxed, hostNetwork, plain, plainDirect }: Crewds,
  sandbox: Sandbox,
  hostNetworkSandbox: Sandbox,
): Promise<void> {
  const input = { question: 'bench' };
  const targets = [sandboxed, hostNetwork, plain, plainDirect, null];
  for (let i = 0; i < 10; i++) for (const through of targets) await sampleLatency(through, input);
  const samples = {
    api: [] as number[],
    hostNetworkApi: [] as number[],
    plainApi: [] as number[],
    plainDirectApi: [] as number[],
    direct: [] as number[],
    directSandboxed: [] as number[],
    directHostNetwork: [] as number[],
  };
  for (let i = 0; i < 100; i++) {
    samples.api.push(await sampleLatency(sandboxed, input));
    samples.hostNetworkApi.push(await sampleLatency(hostNetwork, input));
    samples.plainApi.push(await sampleLatency(plain, input));
    samples.plainDirectApi.push(await sampleLatency(plainDirect, input));
    samples.direct.push(await sampleLatency(null, input));
    samples.directSandboxed.push(await sampleLatency(null, input, sandbox));
    samples.directHostNetwork.push(await sampleLatency(null, input, hostNetworkSandbox));
  }
  const api = median(samples.api);
  const hostNetworkApi = median(samples.hostNetworkApi);
  const plainApi = median(samples.plainApi);
  const plainDirectApi = median(samples.plainDirectApi);
  const direct = median(samples.direct);
  const directSandboxed = median(samples.directSandboxed);
  const directHostNetwork = median(samples.directHostNetwork);
  printFigure('run latency, POST to complete, median', api, 'ms');
  printFigure('run latency baseline, direct spawn to exit, median', direct, 'ms');
  printFigure('run latency ratio (API ÷ direct spawn)', api / direct, 'x', { op: '<=', target: 1.3 });
  printFigure('run latency baseline, direct spawn of the same bwrap command, median', directSandboxed, 'ms');
  printFigure('run latency ratio (API ÷ direct spawn of the same bwrap command)', api / directSandboxed, 'x');
  printFigure("bwrap's own cost per run (direct spawn in bwrap ÷ without)", directSandboxed / direct, 'x');
  printFigure(
    "the isolated network's own cost per run (direct spawn in bwrap, isolated − on, medians)",
    directSandboxed - directHostNetwork,
    'ms',
  );
  printFigure(
    "run latency with the host's network (RUNNER_NETWORK=on), POST to complete, median",
    hostNetworkApi,
    'ms',
  );
  printFigure('run latency ratio (isolated ÷ on)', api / hostNetworkApi, 'x', { op: '<=', target: 1.15 });
  printFigure('run latency without the sandbox, POST to complete, median', plainApi, 'ms');
  printFigure('run latency ratio (sandboxed ÷ plain runner)', api / plainApi, 'x');
  printFigure('run latency without the sandbox, spawned by crewd itself (RUNNER_SPAWNER=direct)', plainDirectApi, 'ms');
  printFigure('run latency ratio (spawner helper ÷ spawn from crewd, no sandbox)', plainApi / plainDirectApi, 'x');
}

/** A crewd whose runners run as `runners` says, on a database and DATA_DIR of its own, with the trivial crew. */
async function withServer(runners: Runners, task: (deployed: Deployed) => Promise<void>): Promise<void> {
  const scratch = await createScratchDatabase();
  const name = `${runners.sandbox}-${runners.spawner}-${runners.network}`;
  const dataDir = path.join(tmpdir(), `crewd-bench-runs-${name}-${process.pid}`);
  let server: Server | null = null;
  try {
    server = await startServer(scratch.url, dataDir, runners);
    await task({ server, trivial: await deployCrew(target(server), 'trivial.mjs') });
  } finally {
    await server?.stop();
    await scratch.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Milliseconds each path took for 300 runs 8 at a time, in three rounds of 100 of each in turn. */
async function timePaths<Name extends string>(paths: Record<Name, () => Promise<void>>): Promise<Record<Name, number>> {
  const ms = Object.fromEntries(Object.keys(paths).map((name) => [name, 0])) as Record<Name, number>;
  // In turn, so that a change in the machine's load hits all alike.
  for (let round = 0; round < 3; round++) {
    for (const [name, task] of Object.entries(paths) as Array<[Name, () => Promise<void>]>) {
      const start = now();
      await inParallel(100, 8, task);
      ms[name] += now() - start;
    }
  }
  return ms;
}

/**
 * 300 runs 8 at a time through each crewd, against as many direct spawns, plain and in the same
 * bwrap command as crewd's: the ratios say what the sandbox, its network, the service and the
 * spawner helper each cost.
 */
async function throughput({ sandboxed, hostNetwork, plain, plainDirect }: Crewds, sandbox: Sandbox): Promise<void> {
  const input = { question: 'bench' };
  const ms = await timePaths({
    api: () => runToComplete(sandboxed.server, sandboxed.trivial, input),
    hostNetworkApi: () => runToComplete(hostNetwork.server, hostNetwork.trivial, input),
    plainApi: () => runToComplete(plain.server, plain.trivial, input),
    plainDirectApi: () => runToComplete(plainDirect.server, plainDirect.trivial, input),
    direct: () => spawnCrew('trivial.mjs', input),
    directSandboxed: () => spawnCrew('trivial.mjs', input, sandbox),
  });
  const runsPerSecond = (total: number) => (300 / total) * 1000;
  printFigure('throughput, 300 runs 8 at a time through the API', runsPerSecond(ms.api), 'runs/s');
  printFigure('throughput baseline, 300 direct spawns 8 at a time', runsPerSecond(ms.direct), 'runs/s');
  printFigure('throughput ratio (API ÷ direct spawn)', ms.direct / ms.api, 'x');
  printFigure(
    'throughput baseline, 300 direct spawns of the same bwrap command',
    runsPerSecond(ms.directSandboxed),
    'runs/s',
  );
  printFigure('throughput ratio (API ÷ direct spawn of the same bwrap command)', ms.directSandboxed / ms.api, 'x', {
    op: '>=',
    target: 0.8,
  });
  printFigure(
    "throughput ratio of bwrap's own cost (direct spawn in bwrap ÷ without)",
    ms.direct / ms.directSandboxed,
    'x',
  );
  printFigure("throughput with the host's network (RUNNER_NETWORK=on)", runsPerSecond(ms.hostNetworkApi), 'runs/s');
  printFigure('throughput ratio (isolated ÷ on)', ms.hostNetworkApi / ms.api, 'x', { op: '>=', target: 0.9 });
  printFigure('throughput, no sandbox, spawner helper', runsPerSecond(ms.plainApi), 'runs/s');
  printFigure('throughput ratio without the sandbox (API ÷ direct spawn)', ms.direct / ms.plainApi, 'x');
  printFigure('throughput, no sandbox, spawned by crewd itself', runsPerSecond(ms.plainDirectApi), 'runs/s');
  printFigure('throughput ratio (spawner helper ÷ spawn from crewd)', ms.plainDirectApi / ms.plainApi, 'x');
}

/**
 * Why runners are forked by a helper: a spawn() from crewd itself blocks its event loop for a time
 * that grows with crewd's memory. Measured in a separate Node process holding that much.
 */
function spawnBlocking(): void {
  for (const megabytes of [100, 1000]) {
    const script = path.join(import.meta.dirname, 'lib/spawn-block.mjs');
    const [ms] = execFileSync(process.execPath, [script, String(megabytes)], { encoding: 'utf8' })
      .trim()
      .split(' ');
    printFigure(`event loop blocked by one spawn() from a process holding ${megabytes} MB, median`, Number(ms), 'ms');
  }
}

export async function run(): Promise<void> {
  const scratch = await createScratchDatabase();
  const dataDir = path.join(tmpdir(), `crewd-bench-runs-${process.pid}`);
  let server: Server | null = null;
  try {
    server = await startServer(scratch.url, dataDir, ISOLATED);
    const sandboxed = server;
    const probe = await probeBubblewrap(process.env.PATH ?? '', 'isolated');
    if (!probe.usable) throw new Error(`the runs bench needs bubblewrap: ${probe.reason}`);
    const network = await probeIsolatedNetwork(probe.bwrapPath);
    if (!network.usable) throw new Error(`the runs bench needs the isolated network: ${network.reason}`);
    // As crewd wraps its runs, so the bwrap baselines spawn the same command line.
    const sandbox = createBubblewrapSandbox({
      bwrapPath: probe.bwrapPath,
      network: 'isolated',
      networkSetup: network.setup,
      dataDir,
    });
    const hostNetworkSandbox = createBubblewrapSandbox({ bwrapPath: probe.bwrapPath, network: 'on', dataDir });
    process.stdout.write(
      'runners: bubblewrap sandbox (RUNNER_SANDBOX=on), network isolated (RUNNER_NETWORK=isolated) unless a figure says otherwise\n',
    );
    const trivial = await deployCrew(target(server), 'trivial.mjs');
    const timed = await deployCrew(target(server), 'timed-events.mjs');
    await withServer({ ...ISOLATED, network: 'on' }, (hostNetwork) =>
      withServer({ ...ISOLATED, sandbox: 'off' }, (plain) =>
        withServer({ ...ISOLATED, sandbox: 'off', spawner: 'direct' }, async (plainDirect) => {
          const crewds = { sandboxed: { server: sandboxed, trivial }, hostNetwork, plain, plainDirect };
          await latency(crewds, sandbox, hostNetworkSandbox);
          await throughput(crewds, sandbox);
          spawnBlocking();
        }),
      ),
    );
    // RUNS_BENCH_QUICK=1: only the figures above (the sandbox's and its network's costs), for comparing changes to them.
    if (process.env.RUNS_BENCH_QUICK !== '1') {
      await relayFigures(target(server), timed);
      await fanOutFigures(server, target(server), timed);
      await tracingFigures();
    }
  } finally {
    agent.destroy();
    await server?.stop();
    await scratch.drop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(BASELINE_FOLDER, { recursive: true, force: true });
  }
}
