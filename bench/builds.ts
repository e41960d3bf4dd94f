import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { packProject } from '../src/cli/pack.js';
import { parseSseText } from '../src/client/sse.js';
import { createScratchDatabase } from './lib/database.js';
import { median, printFigure } from './lib/figures.js';
import { type Proc, startCrewd as startCrewdProcess } from './lib/node-process.js';

/*
 * `npm run bench -- builds`: crewd instances on one PostgreSQL database, as real processes, sharing one
 * BUILD_CACHE_DIR (so the uv that the first build installs into its build tools serves them all).
 * (a) A small Python project with one real PyPI dependency: upload → `ready`, against a bare
 * `python3 -m venv` + `pip install` of the same project measured in the same run (rounds
 * alternate, each with a requirements file of its own so neither side reuses an environment).
 * (b) The identical bundle uploaded again as a new version: upload → `ready` (the environment
 * cache). (c) A run of a version on the instance that has not built it yet: POST → complete.
 * (d) examples/crewai-research from an empty cache (no environment, no download cache): upload →
 * `ready` with uv ÷ with pip (a third instance with BUILD_PYTHON_INSTALLER=pip), rounds alternating;
 * and what the build's import check (importing the crew) takes, alone and as a share of a build whose
 * environment comes from the cache.
 */

const execute = promisify(execFile);
const KEY = 'bench-builds-admin-key-0123456789';
const ROUNDS = Number(process.env.BUILDS_ROUNDS ?? 3);
/** Each round of (d) installs crewai twice: fewer of them. */
const CREWAI_ROUNDS = Math.min(ROUNDS, 2);
const CREWAI_RESEARCH = path.resolve(import.meta.dirname, '../examples/crewai-research');
// biome-ignore lint/suspicious/noExplicitAny: replies of a few known shapes, read field by field
type Json = any;

const CREW = `
import json, sys
import six
request = json.loads(sys.stdin.read())
print(json.dumps({"type": "run.completed", "data": {"output": {"six": six.__version__, "input": request["input"]}}}))
`;

/**
 * The service as a shell here starts it: its user's HOME (where pip finds the user's settings) and the
 * machine's PIP_* settings, which builds hand to pip; runners get neither.
 */
function startCrewd(databaseUrl: string, dataDir: string, settings: Record<string, string>): Promise<Proc> {
  const pipSettings = Object.entries(process.env).filter(
    (entry): entry is [string, string] => entry[0].startsWith('PIP_') && entry[1] !== undefined,
  );
  return startCrewdProcess(databaseUrl, dataDir, KEY, {
    HOME: process.env.HOME ?? '',
    ...Object.fromEntries(pipSettings),
    ...settings,
  });
}

async function api(server: Proc, method: string, url: string, body?: unknown): Promise<Json> {
  const response = await fetch(`${server.base}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${KEY}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

function project(round: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-bench-project-'));
  writeFileSync(path.join(dir, 'crewd.json'), JSON.stringify({ command: ['python', 'crew.py'] }));
  writeFileSync(path.join(dir, 'requirements.txt'), `# ${round}\nsix==1.17.0\n`);
  writeFileSync(path.join(dir, 'crew.py'), CREW);
  return dir;
}

/** Upload → `ready`, in milliseconds; answers the version too. */
async function uploadUntilReady(server: Proc, deploymentId: string, bundle: Buffer, query = '') {
  const started = performance.now();
  const response = await fetch(`${server.base}/v1/deployments/${deploymentId}/versions${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/gzip' },
    body: new Uint8Array(bundle),
  });
  const version = (await response.json()) as Json;
  if (response.status !== 201) throw new Error(`upload: ${JSON.stringify(version)}`);
  for (;;) {
    const current = await api(server, 'GET', `/v1/deployments/${deploymentId}/versions/${version.id}`);
    if (current.status === 'ready') return { ms: performance.now() - started, version: current };
    if (current.status === 'failed') throw new Error(`build failed: ${current.build_error}`);
    await sleep(10);
  }
}

async function buildLog(server: Proc, deploymentId: string, versionId: string): Promise<string[]> {
  const url = `${server.base}/v1/deployments/${deploymentId}/versions/${versionId}/build/events`;
  const response = await fetch(url, { headers: { authorization: `Bearer ${KEY}`, 'last-event-id': '0' } });
  const lines: string[] = [];
  for (const message of parseSseText(await response.text())) {
    if (message.data === undefined) continue;
    const event = JSON.parse(message.data) as Json;
    if (event.type === 'build.log') lines.push(event.data.message);
  }
  return lines;
}

/** Seconds the build's import check took, from its log line. */
async function checkSeconds(server: Proc, deploymentId: string, versionId: string): Promise<number> {
  const lines = await buildLog(server, deploymentId, versionId);
  const line = lines.map((text) => /^entrypoint checked in ([\d.]+) s$/.exec(text)).find((match) => match);
  if (!line) throw new Error(`no import check in the build log of ${versionId}`);
  return Number(line[1]);
}

/** Everything in the shared cache but crewd's build tools: environments and download caches. */
function emptyCache(cacheDir: string): void {
  for (const name of readdirSync(cacheDir)) {
    if (name !== 'build-tools') rmSync(path.join(cacheDir, name), { recursive: true, force: true });
  }
}

/** (d): examples/crewai-research from an empty cache, with uv (`uv`) and with pip (`pip`). */
async function crewaiFromEmptyCache(uv: Proc, pip: Proc, cacheDir: string, deploymentId: string): Promise<void> {
  const bundle = await packProject(CREWAI_RESEARCH);
  const times: Record<'uv' | 'pip', number[]> = { uv: [], pip: [] };
  const checks: number[] = [];
  let built: { server: Proc; versionId: string } | null = null;
  for (let round = 0; round < CREWAI_ROUNDS; round++) {
    const order = round % 2 === 0 ? (['uv', 'pip'] as const) : (['pip', 'uv'] as const);
    for (const side of order) {
      emptyCache(cacheDir);
      const server = side === 'uv' ? uv : pip;
      const result = await uploadUntilReady(server, deploymentId, bundle);
      times[side].push(result.ms);
      checks.push(await checkSeconds(server, deploymentId, result.version.id));
      built = { server, versionId: result.version.id };
    }
  }
  printFigure('builds_crewai_empty_cache_uv_s', median(times.uv) / 1000, 's');
  printFigure('builds_crewai_empty_cache_pip_s', median(times.pip) / 1000, 's');
  printFigure('builds_crewai_empty_cache_uv_vs_pip', median(times.uv) / median(times.pip), 'x', {
    op: '<=',
    target: 0.5,
  });
  if (!built) throw new Error('no rounds');
  // The same bundle again: the environment comes from the cache, the import check runs as in every build.
  const cached: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const result = await uploadUntilReady(built.server, deploymentId, bundle);
    cached.push(result.ms);
    checks.push(await checkSeconds(built.server, deploymentId, result.version.id));
  }
  printFigure('builds_import_check_crewai_s', median(checks), 's');
  printFigure('builds_import_check_share_of_cached_build', (median(checks) * 1000) / median(cached), 'x');
}

/** The baseline: what a person would do by hand for the same project. */
async function bareVenvAndPip(dir: string): Promise<number> {
  const venv = path.join(dir, 'baseline-venv');
  const started = performance.now();
  await execute('python3', ['-m', 'venv', venv]);
  await execute(path.join(venv, 'bin', 'pip'), ['install', '-r', path.join(dir, 'requirements.txt')]);
  const ms = performance.now() - started;
  rmSync(venv, { recursive: true, force: true });
  return ms;
}

export async function run(): Promise<void> {
  const database = await createScratchDatabase();
  const dirs = ['a', 'b', 'pip', 'cache'].map((name) => mkdtempSync(path.join(tmpdir(), `crewd-bench-${name}-`)));
  const cacheDir = dirs[3] as string;
  const projects: string[] = [];
  let a: Proc | null = null;
  let b: Proc | null = null;
  let withPip: Proc | null = null;
  try {
    a = await startCrewd(database.url, dirs[0] as string, { BUILD_CACHE_DIR: cacheDir });
    b = await startCrewd(database.url, dirs[1] as string, { BUILD_CACHE_DIR: cacheDir });
    withPip = await startCrewd(database.url, dirs[2] as string, {
      BUILD_CACHE_DIR: cacheDir,
      BUILD_PYTHON_INSTALLER: 'pip',
    });
    const deployment = await api(a, 'POST', '/v1/deployments', { name: 'bench-builds' });

    // Warm pip's download cache once, so that both sides find the wheel in it; and crewd's build tools (uv).
    const warm = project('warm-up');
    projects.push(warm);
    await bareVenvAndPip(warm);
    await uploadUntilReady(a, deployment.id, await packProject(warm));

    const crewd: number[] = [];
    const baseline: number[] = [];
    let last: { bundle: Buffer; versionId: string } | null = null;
    for (let round = 0; round < ROUNDS; round++) {
      const dir = project(`round ${round} ${Date.now()}`);
      projects.push(dir);
      baseline.push(await bareVenvAndPip(dir));
      const bundle = await packProject(dir);
      const built = await uploadUntilReady(a, deployment.id, bundle, '?environment=production');
      crewd.push(built.ms);
      last = { bundle, versionId: built.version.id };
    }
    const ratio = median(crewd) / median(baseline);
    printFigure('builds_first_build_ms', median(crewd), 'ms');
    printFigure('builds_bare_venv_pip_ms', median(baseline), 'ms');
    printFigure('builds_first_build_vs_venv_pip', ratio, 'x', { op: '<=', target: 1.2 });

    if (!last) throw new Error('no rounds');
    const again: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      again.push((await uploadUntilReady(a, deployment.id, last.bundle, '?environment=production')).ms);
    }
    printFigure('builds_identical_bundle_ready_s', median(again) / 1000, 's', { op: '<=', target: 1 });

    // A fresh version B has never seen: its first run there builds it first.
    const fresh = project(`fresh ${Date.now()}`);
    projects.push(fresh);
    await uploadUntilReady(a, deployment.id, await packProject(fresh), '?environment=production');
    const started = performance.now();
    const created = await api(b, 'POST', '/v1/runs', { deployment_id: deployment.id, input: { from: 'b' } });
    for (;;) {
      const current = await api(b, 'GET', `/v1/runs/${created.run_id}`);
      if (current.status === 'succeeded') break;
      if (current.status === 'failed' || current.status === 'canceled') {
        throw new Error(`run on the other instance: ${current.status} ${current.error_message ?? ''}`);
      }
      await sleep(10);
    }
    printFigure('builds_first_run_on_unbuilt_instance_ms', performance.now() - started, 'ms');

    await crewaiFromEmptyCache(a, withPip, cacheDir, deployment.id);
  } finally {
    await a?.stop();
    await b?.stop();
    await withPip?.stop();
    await database.drop();
    for (const dir of [...dirs, ...projects]) rmSync(dir, { recursive: true, force: true });
  }
}
