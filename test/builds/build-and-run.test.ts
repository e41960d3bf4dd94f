import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PYTHON_RUNNER_DIR } from '../../src/builds/environments.js';
import { createRunContext, dataOf, type RunContext, readStream, startRun, waitForRun } from '../runs/helpers.js';
import { createDeployment, project, tempDataDir, upload, waitForBuild } from './helpers.js';

let ctx: RunContext;
let dataDir: string;

beforeAll(async () => {
  dataDir = tempDataDir();
  ctx = await createRunContext({ DATA_DIR: dataDir });
});
afterAll(async () => ctx?.close());

const NODE_CREW = `
let input = '';
process.stdin.on('data', (chunk) => (input += chunk));
process.stdin.on('end', () => {
  const request = JSON.parse(input);
  console.log(JSON.stringify({ type: 'log', data: { message: 'working' } }));
  console.log(JSON.stringify({ type: 'run.completed', data: { output: {
    cwd: process.cwd(), greeting: request.input.name, secret: process.env.CREW_SECRET ?? null,
    shared: process.env.SHARED ?? null, run: process.env.CREWD_RUN_ID,
  } } }));
});
`;

const PYTHON_CREW = `
import json, os, sys
request = json.loads(sys.stdin.read())
print(json.dumps({"type": "run.completed", "data": {"output": {
  "cwd": os.getcwd(), "prefix": sys.prefix, "input": request["input"], "six": __import__("six").__version__ if os.path.exists("requirements.txt") else None,
}}}))
`;

/** Uploads, promotes once ready, and answers the version. */
async function deployBundle(files: Record<string, string>, name: string) {
  const deploymentId = await createDeployment(ctx, name);
  const response = await upload(ctx, deploymentId, project(files), '?environment=production');
  expect(response.statusCode, response.body).toBe(201);
  const version = await waitForBuild(ctx, deploymentId, response.json().id);
  return { deploymentId, version };
}

async function runToEnd(deploymentId: string, input: Record<string, unknown> = {}) {
  const run = await startRun(ctx, deploymentId, input);
  return waitForRun(ctx, run.run_id, undefined, 120_000);
}

describe('bundles build and run from their own files', () => {
  it('a Node project (package.json), with deployment variables under the version env', async () => {
    const { deploymentId, version } = await deployBundle(
      { 'package.json': JSON.stringify({ name: 'crew', main: 'crew.js', type: 'commonjs' }), 'crew.js': NODE_CREW },
      'node-crew',
    );
    expect(version).toMatchObject({ status: 'ready', build_error: null, runtime: 'node' });
    const deployment = (await ctx.call('GET', `/v1/deployments/${deploymentId}`)).json();
    expect(deployment.environments.production.version_id).toBe(version.id);

    const put = await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, {
      body: { variables: { CREW_SECRET: 'sk-very-secret-value', SHARED: 'from-variables', GONE: 'x' } },
    });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toEqual({ names: ['CREW_SECRET', 'GONE', 'SHARED'] });
    const removed = await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, {
      body: { variables: { GONE: null } },
    });
    expect(removed.json()).toEqual({ names: ['CREW_SECRET', 'SHARED'] });
    expect((await ctx.call('GET', `/v1/deployments/${deploymentId}/variables`)).body).not.toContain('sk-very');

    const run = await runToEnd(deploymentId, { name: 'ada' });
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(run.output).toMatchObject({ greeting: 'ada', secret: 'sk-very-secret-value', shared: 'from-variables' });
    expect(run.output.cwd).toBe(path.join(dataDir, 'versions', version.id, 'project'));
  });

  it('the version env goes over the deployment variables', async () => {
    const { deploymentId } = await deployBundle(
      {
        'crewd.json': JSON.stringify({
          runtime: 'node',
          command: ['node', 'crew.js'],
          env: { SHARED: 'from-version' },
        }),
        'crew.js': NODE_CREW,
      },
      'env-order',
    );
    await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, { body: { variables: { SHARED: 'variable' } } });
    const run = await runToEnd(deploymentId);
    expect(run.output.shared).toBe('from-version');
  });

  it('a standard-library Python project runs in its own virtual environment', async () => {
    const { deploymentId, version } = await deployBundle(
      { 'crewd.json': JSON.stringify({ runtime: 'python', command: ['python', 'crew.py'] }), 'crew.py': PYTHON_CREW },
      'python-crew',
    );
    expect(version).toMatchObject({ status: 'ready', runtime: 'python' });
    const run = await runToEnd(deploymentId, { n: 1 });
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(run.output.cwd).toBe(path.join(dataDir, 'versions', version.id, 'project'));
    expect(run.output.prefix).toContain(path.join(dataDir, 'environments'));
  });

  it('a Python project with a real dependency from PyPI', async () => {
    const { deploymentId, version } = await deployBundle(
      {
        'crewd.json': JSON.stringify({ command: ['python', 'crew.py'] }),
        'requirements.txt': 'six==1.17.0\n',
        'crew.py': PYTHON_CREW,
      },
      'python-six',
    );
    expect(version, JSON.stringify(version)).toMatchObject({ status: 'ready', runtime: 'python' });
    const run = await runToEnd(deploymentId);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(run.output.six).toBe('1.17.0');

    const log = await readStream(`${ctx.baseUrl}/v1/deployments/${deploymentId}/versions/${version.id}/build/events`, {
      headers: { 'last-event-id': '0' },
    });
    const events = dataOf(log.messages);
    expect(events.at(-1)).toEqual({ type: 'complete', status: 'ready', error: null });
    const lines = events
      .filter((event) => event.type === 'build.log')
      .map((event) => (event.data as { message: string }).message);
    expect(lines.some((line) => /six/.test(line))).toBe(true);
    expect(log.messages.filter((m) => m.id).map((m) => Number(m.id))).toEqual(lines.map((_, i) => i + 1));
  });

  it('builds a version again when its files were removed under the running service', async () => {
    const { deploymentId, version } = await deployBundle(
      { 'package.json': JSON.stringify({ name: 'crew', main: 'crew.js' }), 'crew.js': NODE_CREW },
      'removed-files',
    );
    expect((await runToEnd(deploymentId, { name: 'first' })).status).toBe('succeeded');
    rmSync(path.join(dataDir, 'versions', version.id), { recursive: true, force: true });

    const again = await startRun(ctx, deploymentId, { name: 'second' });
    const ended = await waitForRun(ctx, again.run_id, undefined, 120_000);
    expect(ended.status, JSON.stringify(ended)).toBe('succeeded');
    expect(ended.output.greeting).toBe('second');
    const stream = await readStream(`${ctx.baseUrl}/v1/runs/${again.run_id}/events`, {
      headers: { 'last-event-id': '0' },
    });
    expect(dataOf(stream.messages)).toContainEqual({
      type: 'log',
      data: { message: `building version ${version.id} on this instance before its first run here`, stream: 'stdout' },
    });
  });
});

describe.runIf(existsSync(PYTHON_RUNNER_DIR))('the crewd Python runner', () => {
  it('is importable in every Python version’s environment', async () => {
    const probe =
      "import crewd_runner, json; print(json.dumps({'type': 'run.completed', 'data': {'output': {'at': crewd_runner.__file__}}}))";
    const { deploymentId } = await deployBundle(
      { 'crewd.json': JSON.stringify({ runtime: 'python', command: ['python', '-c', probe] }) },
      'runner-probe',
    );
    const run = await runToEnd(deploymentId);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(run.output.at).toContain(PYTHON_RUNNER_DIR);
  });
});

describe('failing builds', () => {
  it('fail the version with the failing step and cannot be promoted', async () => {
    const deploymentId = await createDeployment(ctx, 'broken');
    const response = await upload(
      ctx,
      deploymentId,
      project({
        'crewd.json': JSON.stringify({ command: ['python', 'crew.py'] }),
        'requirements.txt': 'crewd-no-such-package-anywhere==0.0.1\n',
      }),
      '?environment=production',
    );
    const version = await waitForBuild(ctx, deploymentId, response.json().id);
    expect(version.status).toBe('failed');
    expect(version.build_error).toMatch(/^installing the dependencies exited with code 1\n/);
    expect(version.build_error).toMatch(/crewd-no-such-package-anywhere/);

    const deployment = (await ctx.call('GET', `/v1/deployments/${deploymentId}`)).json();
    expect(deployment.environments.production).toBeNull();
    const promote = await ctx.call('PUT', `/v1/deployments/${deploymentId}/environments/production`, {
      body: { version_id: version.id },
    });
    expect(promote.statusCode).toBe(409);
    expect(promote.json().error).toEqual({ code: 'conflict', message: `Version ${version.id} is not ready: failed` });

    const stream = await readStream(
      `${ctx.baseUrl}/v1/deployments/${deploymentId}/versions/${version.id}/build/events`,
    );
    expect(dataOf(stream.messages)).toEqual([{ type: 'complete', status: 'failed', error: version.build_error }]);
    expect(existsSync(path.join(dataDir, 'versions', version.id))).toBe(false);
  });

  it('a build followed live ends with its complete', async () => {
    const deploymentId = await createDeployment(ctx, 'live');
    const response = await upload(
      ctx,
      deploymentId,
      project({ 'crewd.json': JSON.stringify({ command: ['python', 'crew.py'] }), 'crew.py': PYTHON_CREW }),
    );
    const versionId = response.json().id;
    const stream = await readStream(`${ctx.baseUrl}/v1/deployments/${deploymentId}/versions/${versionId}/build/events`);
    const events = dataOf(stream.messages);
    expect(events.at(-1)).toEqual({ type: 'complete', status: 'ready', error: null });
    expect(events.some((event) => event.type === 'build.log')).toBe(true);
  });
});

describe('deleting versions', () => {
  it('is refused for a running version, and takes bundle, files and log with it otherwise', async () => {
    const { deploymentId, version } = await deployBundle(
      { 'crewd.json': JSON.stringify({ runtime: 'node', command: ['node', 'crew.js'] }), 'crew.js': NODE_CREW },
      'deletable',
    );
    const refused = await ctx.call('DELETE', `/v1/deployments/${deploymentId}/versions/${version.id}`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.message).toBe(`Version ${version.id} is the running version of production`);

    await ctx.call('DELETE', `/v1/deployments/${deploymentId}/environments/production`);
    expect(existsSync(path.join(dataDir, 'versions', version.id))).toBe(true);
    const deleted = await ctx.call('DELETE', `/v1/deployments/${deploymentId}/versions/${version.id}`);
    expect(deleted.json()).toEqual({ success: true });
    expect(existsSync(path.join(dataDir, 'versions', version.id))).toBe(false);
    const db = ctx.database.handle.db;
    expect(
      await db.selectFrom('bundles').where('sha256', '=', version.bundle.sha256).select('sha256').execute(),
    ).toEqual([]);
    expect(await db.selectFrom('run_events').where('run_id', '=', version.id).select('seq').execute()).toEqual([]);
    expect((await ctx.call('GET', `/v1/deployments/${deploymentId}/versions/${version.id}`)).statusCode).toBe(404);
  });
});
