import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDataDir } from '../builds/helpers.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { createRunContext, type RunContext } from '../runs/helpers.js';
import { bundleEntries, CLI_TEST_TIMEOUT, runCrewd } from './helpers.js';

let ctx: RunContext;
let home: string;

beforeAll(async () => {
  ctx = await createRunContext({ DATA_DIR: tempDataDir() });
  home = mkdtempSync(path.join(tmpdir(), 'crewd-cli-home-'));
});
afterAll(async () => ctx?.close());

const crewd = (args: string[]) => runCrewd(home, args, { CREWD_URL: ctx.baseUrl, CREWD_API_KEY: ADMIN_KEY });

/** A folder with these files (parent folders made as needed). */
function project(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-cli-deploy-'));
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), content);
  }
  return dir;
}

async function deploymentNames(): Promise<string[]> {
  const { deployments } = (await ctx.call('GET', '/v1/deployments')).json();
  return deployments.map((deployment: { name: string }) => deployment.name);
}

const NODE_CREW = { 'package.json': '{"name": "deploy-crew", "main": "crew.js"}', 'crew.js': '' };

describe('crewd deploy', { timeout: CLI_TEST_TIMEOUT }, () => {
  it('leaves out .env and other likely secrets, names them on stderr, and .crewdignore brings one back', async () => {
    const dir = project({
      ...NODE_CREW,
      '.env': 'OPENAI_API_KEY=sk-secret',
      '.env.local': 'OPENAI_API_KEY=sk-other',
      '.env.example': 'OPENAI_API_KEY=',
      'config/server.pem': '-----BEGIN PRIVATE KEY-----',
      'config/settings.json': '{}',
      id_ed25519: 'key',
      '.npmrc': '//registry.npmjs.org/:_authToken=npm_secret',
      '.aws/credentials': '[default]',
      '.crewdignore': '# the example carries no values\n!.env.example\n',
    });
    const deployed = await crewd(['deploy', dir, '--deployment', 'secrets-left-out']);
    expect(deployed.code, deployed.stderr).toBe(0);

    const { deployments } = (await ctx.call('GET', '/v1/deployments')).json();
    const deployment = deployments.find((found: { name: string }) => found.name === 'secrets-left-out');
    expect(await bundleEntries(ctx, deployment.id, deployed.stdout.trim())).toEqual([
      '.crewdignore',
      '.env.example',
      'config/',
      'config/settings.json',
      'crew.js',
      'package.json',
    ]);
    const leftOut = deployed.stderr.match(/^Left out as likely secrets: (.*)$/m)?.[1]?.split(', ');
    expect(leftOut?.sort()).toEqual(['.aws/', '.env', '.env.local', '.npmrc', 'config/server.pem', 'id_ed25519']);
    expect(deployed.stderr).toMatch(
      /crewd variables set <deployment> --from \.env; to upload one anyway, add !<its name>/,
    );
  });

  it('says nothing of secrets when there are none', async () => {
    const deployed = await crewd(['deploy', project(NODE_CREW), '--deployment', 'no-secrets']);
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(deployed.stderr).not.toMatch(/Left out/);
  });

  it('refuses an id that names no deployment, and creates none', async () => {
    const deployed = await crewd(['deploy', project(NODE_CREW), '--deployment', 'dep_doesnotexist']);
    expect(deployed.code).toBe(2);
    expect(deployed.stderr).toMatch(/^crewd: No deployment dep_doesnotexist: check the id/m);
    expect(await deploymentNames()).not.toContain('dep_doesnotexist');
  });

  it('refuses a bundle the service would refuse before creating its deployment', async () => {
    const none = await crewd(['deploy', project({ 'notes.txt': 'no project file' }), '--deployment', 'no-project']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(
      /The bundle has no project file at its root: looked for crewd\.json.*Nothing was created/,
    );

    const badJson = await crewd(['deploy', project({ 'crewd.json': '{"crew": ' }), '--deployment', 'bad-json']);
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toMatch(/crewd\.json: is not valid JSON\. Nothing was created/);

    const names = await deploymentNames();
    expect(names).not.toContain('no-project');
    expect(names).not.toContain('bad-json');
  });
});
