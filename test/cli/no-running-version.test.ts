import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeployment, project, tempDataDir, upload, waitForBuild } from '../builds/helpers.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { createRunContext, crew, type RunContext } from '../runs/helpers.js';
import { CLI_TEST_TIMEOUT, runCrewd } from './helpers.js';

let ctx: RunContext;
let home: string;

beforeAll(async () => {
  ctx = await createRunContext({ DATA_DIR: tempDataDir() });
  home = mkdtempSync(path.join(tmpdir(), 'crewd-cli-home-'));
});
afterAll(async () => ctx?.close());

const crewd = (args: string[]) => runCrewd(home, args, { CREWD_URL: ctx.baseUrl, CREWD_API_KEY: ADMIN_KEY });
const NOTHING_RUNS = 'crewd: No running version found for production environment: ';

describe('`crewd run` of a deployment nothing runs in says why and what to do', { timeout: CLI_TEST_TIMEOUT }, () => {
  it('a deployment without a version: deploy one', async () => {
    await createDeployment(ctx, 'empty');
    const result = await crewd(['run', 'empty', '--follow']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      `${NOTHING_RUNS}empty has no version yet: crewd deploy <folder> --deployment empty --environment production`,
    );
  });

  it('a version whose build failed: its first line of error and where its log is', async () => {
    const deploymentId = await createDeployment(ctx, 'broken');
    const manifest = { name: 'x', main: 'crew.js', dependencies: { broken: 'npm:@@@' } };
    const bundle = project({ 'package.json': JSON.stringify(manifest), 'crew.js': '' });
    const version = (await upload(ctx, deploymentId, bundle, '?environment=production')).json();
    expect((await waitForBuild(ctx, deploymentId, version.id)).status).toBe('failed');
    const result = await crewd(['run', 'broken']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${NOTHING_RUNS}version 1 (${version.id}) failed to build: installing`);
    expect(result.stderr).toContain(
      `(crewd builds log ${version.id} shows its log); fix the project and deploy it again with --environment production`,
    );
  });

  it('a ready version never promoted, in a thread too: the promote command', async () => {
    const deploymentId = await createDeployment(ctx, 'unpromoted');
    const body = { command: crew('trivial.mjs') };
    expect((await ctx.call('POST', `/v1/deployments/${deploymentId}/versions`, { body })).statusCode).toBe(201);
    const expected = `${NOTHING_RUNS}version 1 is ready but not running there: crewd promote unpromoted 1`;
    const result = await crewd(['run', 'unpromoted']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(expected);
    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();
    const inThread = await crewd(['run', 'unpromoted', '--thread', thread.thread_id]);
    expect(inThread.code).toBe(2);
    expect(inThread.stderr.trim()).toBe(expected);
  });
});
