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
print(json.dumps({"type": "run.completed", "data": {"output": {"prefix": sys.prefix, "six": __import__("six").__version__}}}))
`;

const folder = mkdtempSync(path.join(tmpdir(), 'crewd-uv-'));
const uv = installUv(folder);
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const title =
  'reason' in uv ? `Python builds with uv on PATH (skipped: ${uv.reason})` : 'Python builds with uv on PATH';

describe.skipIf('reason' in uv)(title, () => {
  let ctx: RunContext;
  beforeAll(async () => {
    const bin = 'bin' in uv ? uv.bin : '';
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

    const url = `${ctx.baseUrl}/v1/deployments/${deploymentId}/versions/${version.id}/build/events`;
    const log = await readStream(url, { headers: { 'last-event-id': '0' } });
    const lines = dataOf(log.messages)
      .filter((event) => event.type === 'build.log')
      .map((event) => (event.data as { message: string }).message);
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
