import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { packProject } from '../src/cli/pack.js';
import { createScratchDatabase } from './lib/database.js';
import { median, printFigure } from './lib/figures.js';
import { type Proc, startCrewd as startCrewdProcess } from './lib/node-process.js';

/*
 * `npm run bench -- builds`: two crewd instances on one PostgreSQL database, as real processes.
 * (a) A small Python project with one real PyPI dependency: upload → `ready`, against a bare
 * `python3 -m venv` + `pip install` of the same project measured in the same run (rounds
 * alternate, each with a requirements file of its own so neither side reuses an environment).
 * (b) The identical bundle uploaded again as a new version: upload → `ready` (the environment
 * cache). (c) A run of a version on the instance that has not built it yet: POST → complete.
 */

const execute = promisify(execFile);
const KEY = 'bench-builds-admin-key-0123456789';
const ROUNDS = Number(process.env.BUILDS_ROUNDS ?? 3);
// biome-ignore lint/suspicious/noExplicitAny: replies of a few known shapes, read field by field
type Json = any;

const CREW = `
import json, sys
import six
request = json.loads(sys.stdin.read())
print(json.dumps({"type": "run.completed", "data": {"output": {"six": six.__version__, "input": request["input"]}}}))
`;

function startCrewd(databaseUrl: string, dataDir: string): Promise<Proc> {
  const pipSettings = Object.entries(process.env).filter(
    (entry): entry is [string, string] => entry[0].startsWith('PIP_') && entry[1] !== undefined,
  );
  return startCrewdProcess(databaseUrl, dataDir, KEY, {
    HOME: process.env.HOME ?? '',
    ...Object.fromEntries(pipSettings),
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
  const dirs = [mkdtempSync(path.join(tmpdir(), 'crewd-bench-a-')), mkdtempSync(path.join(tmpdir(), 'crewd-bench-b-'))];
  const projects: string[] = [];
  let a: Proc | null = null;
  let b: Proc | null = null;
  try {
    a = await startCrewd(database.url, dirs[0] as string);
    b = await startCrewd(database.url, dirs[1] as string);
    const deployment = await api(a, 'POST', '/v1/deployments', { name: 'bench-builds' });

    // Warm pip's download cache once, so that both sides find the wheel in it.
    const warm = project('warm-up');
    projects.push(warm);
    await bareVenvAndPip(warm);

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
  } finally {
    await a?.stop();
    await b?.stop();
    await database.drop();
    for (const dir of [...dirs, ...projects]) rmSync(dir, { recursive: true, force: true });
  }
}
