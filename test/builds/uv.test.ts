import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, dataOf, type RunContext, readStream, startRun, waitForRun } from '../runs/helpers.js';
import { createDeployment, project, tempDataDir, upload, waitForBuild } from './helpers.js';

/** uv from PyPI into a folder of its own, or why it could not be had. */
function installUv(folder: string): { bin: string } | { reason: string } {
  try {
    execFileSync('python3', ['-m', 'pip', 'install', '--quiet', '--target', folder, 'uv'], {
      stdio: 'pipe',
      timeout: 120_000,
    });
  } catch (error) {
    const detail = (error as { stderr?: Buffer }).stderr?.toString().trim().split('\n').at(-1);
    return { reason: `pip install uv failed: ${detail ?? (error as Error).message}` };
  }
  const bin = path.join(folder, 'bin');
  return existsSync(path.join(bin, 'uv')) ? { bin } : { reason: 'pip installed uv without its uv program' };
}

const CREW = `
import json, sys
output = {"prefix": sys.prefix, "base": sys.base_prefix, "six": __import__("six").__version__}
print(json.dumps({"type": "run.completed", "data": {"output": output}}))
`;

/** The machine's package-tool settings and home, as a service started here would hand its builds. */
const toolSettings = Object.fromEntries(
  Object.entries(process.env).filter(
    (entry): entry is [string, string] =>
      entry[1] !== undefined && /^(HOME|SSL_CERT_FILE|SSL_CERT_DIR|PIP_.*|(https?|no|all)_proxy)$/i.test(entry[0]),
  ),
);

/** This test process's PATH without the folders that hold a uv. */
const pathWithoutUv = (process.env.PATH ?? '')
  .split(':')
  .filter((folder) => folder !== '' && !existsSync(path.join(folder, 'uv')))
  .join(':');

async function buildLog(ctx: RunContext, deploymentId: string, versionId: string): Promise<string[]> {
  const url = `${ctx.baseUrl}/v1/deployments/${deploymentId}/versions/${versionId}/build/events`;
  const log = await readStream(url, { headers: { 'last-event-id': '0' } });
  return dataOf(log.messages)
    .filter((event) => event.type === 'build.log')
    .map((event) => (event.data as { message: string }).message);
}

/** A project needing six (a `pin` of its own makes an environment of its own), built in production. */
async function buildSixProject(ctx: RunContext, deploymentId: string, pin: string) {
  const bundle = project({
    'crewd.json': JSON.stringify({ command: ['python', 'crew.py'] }),
    'requirements.txt': `# ${pin}\nsix==1.17.0\n`,
    'crew.py': CREW,
  });
  const response = await upload(ctx, deploymentId, bundle, '?environment=production');
  const version = await waitForBuild(ctx, deploymentId, response.json().id, 300_000);
  expect(version.status, version.build_error).toBe('ready');
  return { version, log: await buildLog(ctx, deploymentId, version.id) };
}

describe('Python builds without uv on PATH', () => {
  let ctx: RunContext;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = tempDataDir();
    ctx = await createRunContext({ ...toolSettings, DATA_DIR: dataDir, PATH: pathWithoutUv });
  });
  afterAll(async () => ctx?.close());

  it('install uv once into the build tools and use it', {
    timeout: 600_000,
  }, async () => {
    const deploymentId = await createDeployment(ctx, 'uv-installed');
    const program = path.join(dataDir, 'environments', 'build-tools', 'uv', 'bin', 'uv');
    const first = await buildSixProject(ctx, deploymentId, `first ${Date.now()}`);
    expect(first.log.some((line) => line.startsWith("uv is not on PATH: installing it once into crewd's build"))).toBe(
      true,
    );
    expect(first.log).toContain(`using uv (${program})`);

    const second = await buildSixProject(ctx, deploymentId, `second ${Date.now()}`);
    expect(second.log.some((line) => line.startsWith('uv is not on PATH'))).toBe(false);
    expect(second.log).toContain(`using uv (${program})`);

    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(run.output.six).toBe('1.17.0');
    expect(readFileSync(path.join(run.output.prefix, 'pyvenv.cfg'), 'utf8')).toMatch(/^uv = /m);
  });

  it("make the environment from the python3 that PATH names, not the one beside crewd's node", {
    timeout: 120_000,
  }, async () => {
    const deploymentId = await createDeployment(ctx, 'python3-of-path');
    const bundle = project({
      'crewd.json': JSON.stringify({ command: ['python', 'crew.py'] }),
      'crew.py':
        'import json, sys\nprint(json.dumps({"type": "run.completed", "data": {"output": {"base": sys.base_prefix}}}))\n',
    });
    const response = await upload(ctx, deploymentId, bundle, '?environment=production');
    const version = await waitForBuild(ctx, deploymentId, response.json().id);
    expect(version.status, version.build_error).toBe('ready');
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    const python3 = execFileSync('python3', ['-c', 'import sys; print(sys.base_prefix)'], {
      env: { ...process.env, PATH: pathWithoutUv },
    });
    expect(run.output.base).toBe(python3.toString().trim());
  });
});

const folder = mkdtempSync(path.join(tmpdir(), 'crewd-uv-'));
const uv = installUv(folder);
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const title =
  'reason' in uv ? `Python builds with uv on PATH (skipped: ${uv.reason})` : 'Python builds with uv on PATH';

describe.skipIf('reason' in uv)(title, () => {
  let ctx: RunContext;
  beforeAll(async () => {
    const bin = 'bin' in uv ? uv.bin : '';
    // A folder the sandbox's view leaves out: builds show the uv of PATH to their steps.
    ctx = await createRunContext({ DATA_DIR: tempDataDir(), PATH: `${bin}:${process.env.PATH ?? ''}` });
  });
  afterAll(async () => ctx?.close());

  it('make the environment and install with uv, and the build log says so', async () => {
    const deploymentId = await createDeployment(ctx, 'with-uv');
    const bundle = project({
      'crewd.json': JSON.stringify({ command: ['python', 'crew.py'] }),
      'requirements.txt': 'six==1.17.0\n',
      'crew.py': CREW,
    });
    const response = await upload(ctx, deploymentId, bundle, '?environment=production');
    const version = await waitForBuild(ctx, deploymentId, response.json().id);
    expect(version.status, version.build_error).toBe('ready');

    const lines = await buildLog(ctx, deploymentId, version.id);
    const program = path.join('bin' in uv ? uv.bin : '', 'uv');
    expect(lines).toContain(`using uv (${program})`);
    expect(lines.some((line) => line.startsWith(`$ ${program} venv `))).toBe(true);
    expect(lines.some((line) => line.startsWith(`$ ${program} pip install `))).toBe(true);

    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(run.output.six).toBe('1.17.0');
    // uv writes its own version into the environments it makes.
    expect(readFileSync(path.join(run.output.prefix, 'pyvenv.cfg'), 'utf8')).toMatch(/^uv = /m);
  });
});

describe('Python builds where uv can be neither found nor installed', () => {
  let ctx: RunContext;
  beforeAll(async () => {
    // A machine whose pip may use no package index (a pip setting the docs name): uv cannot be installed.
    ctx = await createRunContext({ DATA_DIR: tempDataDir(), PATH: pathWithoutUv, PIP_NO_INDEX: '1' });
  });
  afterAll(async () => ctx?.close());

  it('install with pip after one warning, and try no more in this process', { timeout: 300_000 }, async () => {
    const deploymentId = await createDeployment(ctx, 'pip-fallback');
    const logs: string[][] = [];
    for (const pin of ['first', 'second']) {
      const bundle = project({
        'crewd.json': JSON.stringify({ command: ['python', '-c', 'pass'] }),
        'requirements.txt': `# ${pin}\n`,
      });
      const response = await upload(ctx, deploymentId, bundle);
      const version = await waitForBuild(ctx, deploymentId, response.json().id);
      expect(version.status, version.build_error).toBe('ready');
      logs.push(await buildLog(ctx, deploymentId, version.id));
    }
    const [first = [], second = []] = logs;
    expect(first.some((line) => line.startsWith('uv is not on PATH: installing it once'))).toBe(true);
    for (const log of [first, second]) {
      const warnings = log.filter((line) => line.startsWith("warning: uv could not be installed into crewd's build"));
      expect(warnings, log.join('\n')).toHaveLength(1);
      expect(warnings[0]).toMatch(/No matching distribution found for uv\): using pip$/);
      expect(log).toContain('using pip (no uv)');
    }
    expect(second.some((line) => line.startsWith('uv is not on PATH: installing'))).toBe(false);
  });
});
