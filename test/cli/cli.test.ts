import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDataDir } from '../builds/helpers.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { createRunContext, crew, type RunContext } from '../runs/helpers.js';
import { bundleEntries, CLI_TEST_TIMEOUT, jsonLines, runCrewd } from './helpers.js';

let ctx: RunContext;
let home: string;

beforeAll(async () => {
  ctx = await createRunContext({ DATA_DIR: tempDataDir() });
  home = mkdtempSync(path.join(tmpdir(), 'crewd-cli-home-'));
});
afterAll(async () => ctx?.close());

const crewd = (args: string[], env: Record<string, string> = {}) => runCrewd(home, args, env);

const NODE_CREW = `
const fs = require('node:fs');
let input = '';
process.stdin.on('data', (chunk) => (input += chunk));
process.stdin.on('end', () => {
  const request = JSON.parse(input);
  console.log(JSON.stringify({ type: 'task.started', data: { task: 'greet' } }));
  console.log('a plain line');
  console.log(JSON.stringify({ type: 'run.completed', data: { output: { hello: request.input.name, files: fs.readdirSync('.').sort() } } }));
});
`;

function makeProject(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-cli-project-'));
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'cli-crew', main: 'crew.js' }));
  writeFileSync(path.join(dir, 'crew.js'), NODE_CREW);
  writeFileSync(path.join(dir, '.crewdignore'), '# local notes\nsecret.txt\nscratch/\n');
  writeFileSync(path.join(dir, 'secret.txt'), 'do not upload');
  for (const folder of ['node_modules/left-out', 'scratch', '.git', 'lib/__pycache__']) {
    mkdirSync(path.join(dir, folder), { recursive: true });
    writeFileSync(path.join(dir, folder, 'file'), 'x');
  }
  writeFileSync(path.join(dir, 'lib', 'util.js'), 'module.exports = 1;');
  return dir;
}

describe('the crewd command against a running service', { timeout: CLI_TEST_TIMEOUT }, () => {
  it('says what to fix before login, with a wrong key, and without a service (exit 2)', async () => {
    const before = await crewd(['runs', 'list']);
    expect(before.code).toBe(2);
    expect(before.stderr).toMatch(/Not logged in: run `crewd login --url <url> --key <key>`/);

    const wrong = await crewd(['login', '--url', ctx.baseUrl, '--key', 'crewd_wrong']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/Invalid API key: check the API key/);

    const nowhere = await crewd(['runs', 'list'], { CREWD_URL: 'http://127.0.0.1:1', CREWD_API_KEY: ADMIN_KEY });
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toMatch(/Cannot reach crewd at http:\/\/127\.0\.0\.1:1/);

    const env = { CREWD_URL: ctx.baseUrl, CREWD_API_KEY: ADMIN_KEY };
    const missing = await crewd(['runs', 'get', 'run_missing'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^crewd: Run not found$/m);
    const stream = await crewd(['runs', 'tail', 'run_missing'], env);
    expect(stream.code).toBe(2);
    expect(stream.stderr).toMatch(/^crewd: Run not found$/m);

    const usage = await crewd(['run']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/missing required argument 'deployment'/);
  });

  it('login, deploy, run --follow, runs tail, list, get', async () => {
    const login = await crewd(['login', '--url', ctx.baseUrl, '--key', ADMIN_KEY]);
    expect(login.code, login.stderr).toBe(0);
    expect(statSync(path.join(home, '.config', 'crewd', 'credentials.json')).mode & 0o777).toBe(0o600);

    const project = makeProject();
    const deployed = await crewd(['deploy', project, '--deployment', 'cli-crew', '--environment', 'production']);
    expect(deployed.code, deployed.stderr).toBe(0);
    const versionId = deployed.stdout.trim();
    expect(versionId).toMatch(/^ver_/);
    expect(deployed.stderr).toMatch(/is building/);
    expect(deployed.stderr).toMatch(/Ready: version 1 now runs in production/);

    const deployments = (await ctx.call('GET', '/v1/deployments')).json().deployments;
    const deployment = deployments.find((d: { name: string }) => d.name === 'cli-crew');
    expect(deployment.environments.production.version_id).toBe(versionId);
    expect(await bundleEntries(ctx, deployment.id, versionId)).toEqual([
      '.crewdignore',
      'crew.js',
      'lib/',
      'lib/util.js',
      'package.json',
    ]);

    const followed = await crewd(['run', 'cli-crew', '--input', '{"name":"ada"}', '--follow']);
    expect(followed.code, followed.stderr).toBe(0);
    expect(JSON.parse(followed.stdout)).toEqual({
      hello: 'ada',
      files: ['.crewdignore', 'crew.js', 'lib', 'package.json'],
    });
    expect(followed.stderr).toMatch(/task\.started {2}{"task":"greet"}/);
    expect(followed.stderr).toMatch(/log {2}a plain line/);
    expect(followed.stderr).toMatch(/run succeeded/);

    const input = path.join(project, 'input.json');
    writeFileSync(input, '{"name":"from a file"}');
    const started = await crewd(['run', 'cli-crew', '--input', `@${input}`]);
    expect(started.code).toBe(0);
    const runId = JSON.parse(started.stdout).run_id;

    const tailed = await crewd(['runs', 'tail', runId]);
    expect(tailed.code).toBe(0);
    expect(tailed.stdout).toMatch(/^\[1\] run\.started/m);
    expect(tailed.stdout).toMatch(/run\.completed {2}.*from a file/);

    const json = await crewd(['runs', 'tail', runId, '--json']);
    const lines = jsonLines(json.stdout);
    expect(lines.at(-1)).toMatchObject({ type: 'complete', status: 'succeeded' });
    expect(lines.map((line) => line.type)).toContain('task.started');

    const listed = await crewd(['runs', 'list', '--deployment', 'cli-crew']);
    expect(listed.stdout).toContain(runId);
    const got = await crewd(['runs', 'get', runId]);
    expect(JSON.parse(got.stdout)).toMatchObject({ id: runId, status: 'succeeded' });

    const badInput = await crewd(['run', 'cli-crew', '--input', '[1,2]']);
    expect(badInput.code).toBe(2);
    expect(badInput.stderr).toMatch(/--input: must be a JSON object/);
  });

  it('exit 1 when the run fails, or the build does', async () => {
    const created = await ctx.call('POST', '/v1/deployments', { body: { name: 'cli-failing' } });
    await ctx.call('POST', `/v1/deployments/${created.json().id}/versions`, {
      body: { command: crew('failing.mjs'), environment: 'production' },
    });
    const failed = await crewd(['run', 'cli-failing', '--follow'], {
      CREWD_URL: ctx.baseUrl,
      CREWD_API_KEY: ADMIN_KEY,
    });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/run failed/);

    const broken = mkdtempSync(path.join(tmpdir(), 'crewd-cli-broken-'));
    writeFileSync(path.join(broken, 'crewd.json'), JSON.stringify({ command: ['python', 'crew.py'] }));
    writeFileSync(path.join(broken, 'requirements.txt'), 'crewd-no-such-package-anywhere==0.0.1\n');
    const build = await crewd(['deploy', broken, '--deployment', 'cli-broken']);
    expect(build.code).toBe(1);
    expect(build.stderr).toMatch(/Build failed: installing the dependencies exited with code 1/);
    expect(build.stdout.trim()).toMatch(/^ver_/);
  });
});

describe('runs tail across closed streams', { timeout: CLI_TEST_TIMEOUT }, () => {
  let short: RunContext;
  beforeAll(async () => {
    short = await createRunContext({ DATA_DIR: tempDataDir(), EVENT_STREAM_TIMEOUT_SECONDS: '0.7' });
  });
  afterAll(async () => short?.close());

  it('resumes with Last-Event-ID: every event once, in order', async () => {
    const created = await short.call('POST', '/v1/deployments', { body: { name: 'ticker' } });
    await short.call('POST', `/v1/deployments/${created.json().id}/versions`, {
      body: { command: crew('slow.mjs'), environment: 'production' },
    });
    const env = { CREWD_URL: short.baseUrl, CREWD_API_KEY: ADMIN_KEY };
    const started = await crewd(['run', 'ticker', '--input', '{"ticks": 20, "interval_ms": 150}'], env);
    const runId = JSON.parse(started.stdout).run_id;
    const tailed = await crewd(['runs', 'tail', runId, '--json'], env);
    expect(tailed.code, tailed.stderr).toBe(0);
    const events = jsonLines(tailed.stdout);
    const ticks = events.filter((event) => /^tick /.test(event.data?.message ?? '')).map((event) => event.data.message);
    expect(ticks).toEqual(Array.from({ length: 20 }, (_, i) => `tick ${i + 1}`));
    expect(events.filter((event) => event.type === 'complete')).toHaveLength(1);
  });
});
