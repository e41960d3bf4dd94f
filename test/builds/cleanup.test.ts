import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installationCache } from '../../src/builds/environment-cache.js';
import { createRunContext, type RunContext, startRun, until, waitForRun } from '../runs/helpers.js';
import { createDeployment, probeBundle, project, tempDataDir, upload, waitForBuild } from './helpers.js';

let ctx: RunContext;
let dataDir: string;
let cacheDir: string;

beforeAll(async () => {
  dataDir = tempDataDir();
  // This installation's folder of the cache (its id, made here first, is the one the service reads).
  cacheDir = path.join(installationCache(path.join(dataDir, 'environments'), dataDir), 'org_default');
  ctx = await createRunContext({ DATA_DIR: dataDir });
});
afterAll(async () => ctx?.close());

const KEY = /^[0-9a-f]{64}$/;
const environments = () => readdirSync(cacheDir).filter((name) => KEY.test(name));

/** Standard-library Python projects share one environment; a requirements file makes another. */
const stdlib = (marker: string) =>
  project({ 'crewd.json': JSON.stringify({ command: ['python', 'crew.py'] }), 'crew.py': `# ${marker}\n` });
const withRequirements = project({
  'crewd.json': JSON.stringify({ command: ['python', 'crew.py'] }),
  'requirements.txt': '# nothing from the index\n',
  'crew.py': '',
});
const SLOW_CREW = `
import json, time
time.sleep(2)
print(json.dumps({"type": "run.completed", "data": {"output": {"slept": True}}}))
`;

async function built(deploymentId: string, bundle: Buffer) {
  const version = await waitForBuild(ctx, deploymentId, (await upload(ctx, deploymentId, bundle)).json().id);
  expect(version.status, version.build_error).toBe('ready');
  return version;
}

function environmentOf(versionId: string): string {
  const file = path.join(dataDir, 'versions', versionId, 'built.json');
  return path.basename(JSON.parse(readFileSync(file, 'utf8')).environmentDir);
}

const remove = (deploymentId: string, versionId: string) =>
  ctx.call('DELETE', `/v1/deployments/${deploymentId}/versions/${versionId}`);

describe('the environment cache is cleaned', () => {
  it('of environments no version uses any more, once their last version is deleted', async () => {
    const deploymentId = await createDeployment(ctx, 'cleanup');
    const first = await built(deploymentId, stdlib('first'));
    const second = await built(deploymentId, stdlib('second'));
    const third = await built(deploymentId, withRequirements);
    const shared = environmentOf(first.id);
    const own = environmentOf(third.id);
    expect(environmentOf(second.id)).toBe(shared);
    expect(environments().sort()).toEqual([shared, own].sort());

    expect((await remove(deploymentId, third.id)).statusCode).toBe(200);
    expect(environments()).toEqual([shared]);
    expect((await remove(deploymentId, first.id)).statusCode).toBe(200);
    expect(environments()).toEqual([shared]);
    expect((await remove(deploymentId, second.id)).statusCode).toBe(200);
    expect(environments()).toEqual([]);
  });

  it('never of an environment a build or a running run is using', async () => {
    const deploymentId = await createDeployment(ctx, 'in-use');
    const running = await built(
      deploymentId,
      project({ 'crewd.json': JSON.stringify({ command: ['python', 'crew.py'] }), 'crew.py': SLOW_CREW }),
    );
    await ctx.call('PUT', `/v1/deployments/${deploymentId}/environments/production`, {
      body: { version_id: running.id },
    });
    const run = await startRun(ctx, deploymentId);
    await waitForRun(ctx, run.run_id, ['running']);
    // A build held open in its install step: its environment exists, and no version names it yet.
    const building = (await upload(ctx, deploymentId, probeBundle({ wait_for: 'go' }))).json();
    const go = path.join(dataDir, 'versions', building.id, 'project', 'go');
    await until(() => existsSync(path.join(dataDir, 'versions', building.id, 'project')) && environments().length >= 2);
    const before = environments();

    // Deleting another version sweeps the cache meanwhile.
    const other = await built(deploymentId, withRequirements);
    expect((await remove(deploymentId, other.id)).statusCode).toBe(200);
    expect(environments().sort()).toEqual(before.sort());

    writeFileSync(go, '');
    expect((await waitForBuild(ctx, deploymentId, building.id)).status).toBe('ready');
    expect((await waitForRun(ctx, run.run_id)).status).toBe('succeeded');
  });

  it('at start, of what deleted versions and failed builds left, and of nothing another installation claims', async () => {
    const leftover = (name: string, files: string[]) => {
      const folder = path.join(cacheDir, name);
      mkdirSync(folder, { recursive: true });
      for (const file of files) {
        mkdirSync(path.dirname(path.join(folder, file)), { recursive: true });
        writeFileSync(path.join(folder, file), file.startsWith('.claims/') ? claimedBy(file) : '');
      }
      return folder;
    };
    const elsewhere = tempDataDir();
    const claimedBy = (file: string) => (file.endsWith('alive') ? elsewhere : path.join(elsewhere, 'gone'));
    const key = (n: number) => String(n).repeat(64);
    const unused = leftover(key(1), ['.complete']);
    const unfinished = leftover(key(2), ['venv/bin/python']);
    const otherInstallation = leftover(key(3), ['.complete', '.claims/alive']);
    const goneInstallation = leftover(key(4), ['.complete', '.claims/gone']);
    const ofDeletedVersion = leftover(key(5), ['.complete']);
    const deletedVersion = path.join(dataDir, 'versions', 'ver_deleted_meanwhile');
    mkdirSync(deletedVersion, { recursive: true });
    writeFileSync(path.join(deletedVersion, 'built.json'), JSON.stringify({ environmentDir: ofDeletedVersion }));
    mkdirSync(path.join(cacheDir, `${key(6)}.lock`));
    writeFileSync(path.join(cacheDir, `${key(6)}.lock`, 'pid'), '999999999');

    await ctx.closeApp();
    await ctx.restart();

    for (const folder of [unused, unfinished, goneInstallation, ofDeletedVersion, deletedVersion]) {
      expect(existsSync(folder), folder).toBe(false);
    }
    expect(existsSync(path.join(cacheDir, `${key(6)}.lock`))).toBe(false);
    expect(existsSync(otherInstallation)).toBe(true);
    expect(readdirSync(path.join(otherInstallation, '.claims'))).toEqual(['alive']);
  });
});
