import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installationCache } from '../../src/builds/environment-cache.js';
import { findBwrap } from '../../src/sandbox/probe.js';
import { createRunContext, type RunContext } from '../runs/helpers.js';
import { createDeployment, probeBundle, project, tempDataDir, upload, waitForBuild } from './helpers.js';

interface Attempt {
  ok: boolean;
  value?: unknown;
  error?: string;
}

interface BuildProbe {
  reads: Record<string, Attempt>;
  lists: Record<string, Attempt>;
  writes: Record<string, Attempt>;
  connect: Attempt;
  pip_cache: string;
}

describe.runIf(findBwrap(process.env.PATH ?? '') !== null)('build steps in the sandbox', () => {
  let ctx: RunContext;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = tempDataDir();
    // Build steps get the network runners get: the host's here, to reach crewd's port.
    ctx = await createRunContext({ DATA_DIR: dataDir, RUNNER_SANDBOX: 'on', RUNNER_NETWORK: 'on' });
  });
  afterAll(async () => ctx?.close());

  it('see neither DATA_DIR nor other versions, write only their own folders, and have the network', async () => {
    const deploymentId = await createDeployment(ctx, 'probe');
    const other = project({ 'crewd.json': JSON.stringify({ command: ['python', 'crew.py'] }), 'crew.py': 'pass\n' });
    const first = await waitForBuild(ctx, deploymentId, (await upload(ctx, deploymentId, other)).json().id);
    expect(first.status, first.build_error).toBe('ready');
    const otherFile = path.join(dataDir, 'versions', first.id, 'project', 'crew.py');
    const secret = path.join(dataDir, 'secret.txt');
    writeFileSync(secret, 'a file of crewd');
    expect(existsSync(otherFile)).toBe(true);

    const bundle = probeBundle({
      reads: { secret, otherFile, own: 'targets.json' },
      lists: { versions: path.join(dataDir, 'versions') },
      writes: { dataDir: path.join(dataDir, 'written.txt'), machine: '/usr/crewd-build-probe', own: 'own.txt' },
      port: Number(new URL(ctx.baseUrl).port),
    });
    const version = await waitForBuild(ctx, deploymentId, (await upload(ctx, deploymentId, bundle)).json().id);
    expect(version.status, version.build_error).toBe('ready');
    const probe = JSON.parse(
      readFileSync(path.join(dataDir, 'versions', version.id, 'project', 'probe.json'), 'utf8'),
    ) as BuildProbe;

    expect(probe.reads.secret).toEqual({ ok: false, error: 'FileNotFoundError' });
    expect(probe.reads.otherFile).toEqual({ ok: false, error: 'FileNotFoundError' });
    expect(probe.reads.own?.ok).toBe(true);
    expect(probe.lists.versions).toEqual({ ok: true, value: [version.id] });
    expect(probe.writes.machine?.ok).toBe(false);
    expect(probe.writes.own?.ok).toBe(true);
    // What it wrote into DATA_DIR went to an empty folder of its own, gone with it.
    expect(existsSync(path.join(dataDir, 'written.txt'))).toBe(false);
    expect(probe.connect).toEqual({ ok: true, value: true });
    const cache = installationCache(path.join(dataDir, 'environments'), dataDir);
    expect(probe.pip_cache).toBe(path.join(cache, 'org_default', 'tool-cache', 'pip'));
  });
});
