import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeployment, project, tempDataDir, upload, waitForBuild } from '../builds/helpers.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { createRunContext, crew, deploy, type RunContext } from '../runs/helpers.js';
import { CLI_TEST_TIMEOUT, runCrewd } from './helpers.js';

let ctx: RunContext;
let home: string;
let env: Record<string, string>;

beforeAll(async () => {
  ctx = await createRunContext({ DATA_DIR: tempDataDir() });
  home = mkdtempSync(path.join(tmpdir(), 'crewd-cli-home-'));
  env = { CREWD_URL: ctx.baseUrl, CREWD_API_KEY: ADMIN_KEY };
});
afterAll(async () => ctx?.close());

const crewd = (args: string[]) => runCrewd(home, args, env);

async function twoVersions(): Promise<{ deploymentId: string; first: string; second: string }> {
  const { deploymentId, versionId: first } = await deploy(ctx, crew('trivial.mjs'));
  const body = { command: crew('trivial.mjs') };
  const second = (await ctx.call('POST', `/v1/deployments/${deploymentId}/versions`, { body })).json().id as string;
  return { deploymentId, first, second };
}

describe('managing deployments from the CLI', { timeout: CLI_TEST_TIMEOUT }, () => {
  it('sets, lists and unsets variables from arguments and a .env file, never printing a value', async () => {
    const { deploymentId } = await deploy(ctx, crew('trivial.mjs'));
    const file = path.join(home, 'vars.env');
    writeFileSync(file, '# keys\nexport OPENAI_API_KEY="sk-from-file"\nMODEL=gpt-4o # the model\n');
    const set = await crewd(['variables', 'set', deploymentId, 'TONE=excited', '--from', file]);
    expect(set.code).toBe(0);
    expect(set.stderr + set.stdout).not.toMatch(/sk-from-file|excited|gpt-4o/);
    const listed = await crewd(['variables', 'list', deploymentId]);
    expect(listed.stdout.trim().split('\n').sort()).toEqual(['MODEL', 'OPENAI_API_KEY', 'TONE']);
    const unset = await crewd(['variables', 'unset', deploymentId, 'TONE', '--json']);
    expect(JSON.parse(unset.stdout).names.sort()).toEqual(['MODEL', 'OPENAI_API_KEY']);
    const bad = await crewd(['variables', 'set', deploymentId, 'not an assignment']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('give variables as NAME=value');
  });

  it('lists deployments and versions, promotes one and rolls back', async () => {
    const { deploymentId, first, second } = await twoVersions();
    const promoted = await crewd(['promote', deploymentId, second]);
    expect(promoted.code).toBe(0);
    expect(promoted.stderr).toContain('Version 2');
    const deployments = await crewd(['deployments', '--json']);
    const listed = JSON.parse(deployments.stdout).deployments.find((d: { id: string }) => d.id === deploymentId);
    expect(listed.environments.production.version_id).toBe(second);
    const back = await crewd(['rollback', deploymentId, '--json']);
    expect(JSON.parse(back.stdout).environments.production.version_id).toBe(first);
    const versions = await crewd(['versions', deploymentId]);
    expect(versions.stdout.split('\n')[0]).toMatch(new RegExp(`^${second}\\t2\\tready\\tcommand\\t`));
    const none = await crewd(['rollback', deploymentId]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('No ready version before version 1');
  });

  it('reads a build log again', async () => {
    const deploymentId = await createDeployment(ctx, 'logged');
    const manifest = { name: 'x', main: 'crew.js', dependencies: { broken: 'npm:@@@' } };
    const bundle = project({ 'package.json': JSON.stringify(manifest), 'crew.js': '' });
    const version = (await upload(ctx, deploymentId, bundle)).json();
    expect((await waitForBuild(ctx, deploymentId, version.id)).status).toBe('failed');
    const log = await crewd(['builds', 'log', version.id]);
    expect(log.code).toBe(1);
    expect(log.stdout).toContain('EINVALIDPACKAGENAME');
    expect(log.stderr).toContain('Build failed');
  });

  it('enables and disables a cron, deletes a thread, prints its version and logs out', async () => {
    const { deploymentId } = await deploy(ctx, crew('trivial.mjs'));
    const body = { deployment_id: deploymentId, schedule: '0 * * * *' };
    const cron = (await ctx.call('POST', '/v1/crons', { body })).json();
    expect(JSON.parse((await crewd(['crons', 'disable', cron.id, '--json'])).stdout).enabled).toBe(false);
    expect(JSON.parse((await crewd(['crons', 'enable', cron.id, '--json'])).stdout).enabled).toBe(true);

    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();
    expect((await crewd(['threads', 'delete', thread.thread_id])).code).toBe(0);
    expect((await ctx.call('GET', `/v1/threads/${thread.thread_id}`)).statusCode).toBe(404);

    expect((await crewd(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    await runCrewd(home, ['login', '--url', ctx.baseUrl, '--key', ADMIN_KEY]);
    const credentials = path.join(home, '.config/crewd/credentials.json');
    expect(existsSync(credentials)).toBe(true);
    expect((await runCrewd(home, ['logout'])).stderr).toContain('Logged out');
    expect(existsSync(credentials)).toBe(false);
  });
});
