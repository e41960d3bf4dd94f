import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, type RunContext } from '../runs/helpers.js';
import { createDeployment, project, tarball, tempDataDir, upload, waitForBuild } from './helpers.js';

let ctx: RunContext;
let dataDir: string;
let deploymentId: string;

beforeAll(async () => {
  dataDir = tempDataDir();
  ctx = await createRunContext({ DATA_DIR: dataDir, MAX_BUNDLE_MB: '1' });
  deploymentId = await createDeployment(ctx);
});
afterAll(async () => ctx?.close());

const crewdJson = JSON.stringify({ command: ['node', 'crew.mjs'], runtime: 'node' });
const safeFiles = { 'crewd.json': crewdJson, 'crew.mjs': 'console.log(1)' };

async function versionCount(): Promise<number> {
  const response = await ctx.call('GET', `/v1/deployments/${deploymentId}/versions?limit=1000`);
  return response.json().versions.length;
}

/** Nothing of a refused bundle stays: no version, no bundle, no files on disk. */
async function expectRefused(bundle: Buffer, message: RegExp) {
  const before = await versionCount();
  const bundlesBefore = await ctx.database.handle.db.selectFrom('bundles').select('sha256').execute();
  const response = await upload(ctx, deploymentId, bundle);
  expect(response.statusCode, response.body).toBe(400);
  expect(response.json().error.code).toBe('bad_request');
  expect(response.json().error.message).toMatch(message);
  expect(await versionCount()).toBe(before);
  const bundlesAfter = await ctx.database.handle.db.selectFrom('bundles').select('sha256').execute();
  expect(bundlesAfter.length).toBe(bundlesBefore.length);
  const versions = path.join(dataDir, 'versions');
  expect(existsSync(versions) ? readdirSync(versions).filter((name) => name.includes('unpacking')) : []).toEqual([]);
}

describe('unsafe bundles are refused and leave nothing', () => {
  const base = [
    { path: 'crewd.json', body: crewdJson },
    { path: 'crew.mjs', body: 'x' },
  ];
  it('absolute paths', () => expectRefused(tarball([...base, { path: '/etc/evil', body: 'x' }]), /absolute path/));
  it('.. in a path', () => expectRefused(tarball([...base, { path: 'a/../../evil', body: 'x' }]), /\.\./));
  it('a symbolic link leaving the folder', () =>
    expectRefused(tarball([...base, { path: 'out', type: 'SymbolicLink', linkpath: '../../etc' }]), /outside/));
  it('a symbolic link to an absolute path', () =>
    expectRefused(tarball([...base, { path: 'out', type: 'SymbolicLink', linkpath: '/etc/passwd' }]), /absolute/));
  it('a hard link leaving the folder', () =>
    expectRefused(tarball([...base, { path: 'out', type: 'Link', linkpath: '../x' }]), /outside/));
  it('device files', async () => {
    await expectRefused(tarball([...base, { path: 'dev', type: 'CharacterDevice' }]), /CharacterDevice/);
    await expectRefused(tarball([...base, { path: 'dev', type: 'BlockDevice' }]), /BlockDevice/);
    await expectRefused(tarball([...base, { path: 'fifo', type: 'FIFO' }]), /FIFO/);
  });
  it('more than 20,000 entries', () =>
    expectRefused(
      tarball([...base, ...Array.from({ length: 20_000 }, (_, i) => ({ path: `d${i}`, type: 'Directory' as const }))]),
      /more than 20000 entries/,
    ));
  it('more than 512 MiB unpacked', async () => {
    // A sparse claim: the header says 600 MiB; the refusal comes before the bytes are needed.
    const huge = tarball(base);
    const { gunzipSync, gzipSync } = await import('node:zlib');
    const raw = gunzipSync(huge);
    const { Header } = await import('tar');
    const block = Buffer.alloc(512);
    new Header({ path: 'big.bin', type: 'File', size: 600 * 1024 * 1024, mode: 0o644, mtime: new Date(0) }).encode(
      block,
    );
    await expectRefused(
      gzipSync(Buffer.concat([raw.subarray(0, raw.length - 1024), block, Buffer.alloc(1024)])),
      /512 MiB/,
    );
  });
  it('something that is not a gzipped tar', () => expectRefused(Buffer.from('hello, not a tar'), /not a gzipped tar/));
  it('a project without a project file', () =>
    expectRefused(project({ 'main.py': 'print(1)' }), /crewd\.json, langgraph\.json, pyproject\.toml.*package\.json/));
  it('a crewd.json with two entry points', () =>
    expectRefused(
      project({ 'crewd.json': JSON.stringify({ crew: 'a:b', command: ['x'] }) }),
      /crewd\.json: must have exactly one of crew, flow, graph, command/,
    ));

  it('a body over MAX_BUNDLE_MB answers 413', async () => {
    const response = await upload(ctx, deploymentId, Buffer.alloc(2 * 1024 * 1024, 1));
    expect(response.statusCode).toBe(413);
    expect(response.json().error.code).toBe('payload_too_large');
  });
});

describe('project detection', () => {
  const detect = async (files: Record<string, string>) => {
    const response = await upload(ctx, deploymentId, project(files));
    expect(response.statusCode, response.body).toBe(201);
    return response.json();
  };

  it('crewd.json with a graph', async () => {
    const version = await detect({ 'crewd.json': JSON.stringify({ graph: 'agent.py:graph' }), 'agent.py': '' });
    expect(version).toMatchObject({
      source: 'bundle',
      status: 'building',
      runtime: 'python',
      entrypoint: { graph: 'agent.py:graph' },
      command: ['python', '-m', 'crewd_runner', '--graph', 'agent.py:graph'],
      cwd: null,
      build_error: null,
    });
    expect(version.bundle.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('langgraph.json: the graph named by crewd.graph', async () => {
    const version = await detect({
      'langgraph.json': JSON.stringify({
        graphs: { first: './one.py:graph', second: './two.py:app' },
        dependencies: ['.'],
        env: '.env',
        crewd: { graph: 'second' },
      }),
    });
    expect(version).toMatchObject({ runtime: 'python', entrypoint: { graph: 'two.py:app' } });
  });

  it('a CrewAI project: the @CrewBase class', async () => {
    const version = await detect({
      'pyproject.toml': '[project]\nname = "research"\ndependencies = []\n\n[tool.crewai]\ntype = "crew"\n',
      'src/research/crew.py': 'from crewai.project import CrewBase\n\n@CrewBase\nclass ResearchCrew:\n    pass\n',
      'src/research/main.py': 'def run():\n    pass\n',
    });
    expect(version).toMatchObject({ runtime: 'python', entrypoint: { crew: 'research.crew:ResearchCrew' } });
  });

  it('a CrewAI flow', async () => {
    const version = await detect({
      'pyproject.toml': '[project]\nname = "poem"\n\n[tool.crewai]\ntype = "flow"\n',
      'src/poem/main.py': 'from crewai.flow import Flow\n\nclass PoemFlow(Flow[dict]):\n    pass\n',
    });
    expect(version).toMatchObject({ entrypoint: { flow: 'poem.main:PoemFlow' } });
  });

  it('package.json: node <main>, or its scripts.crewd', async () => {
    const plain = await detect({ 'package.json': JSON.stringify({ name: 'c', main: 'src/crew.js' }) });
    expect(plain).toMatchObject({
      runtime: 'node',
      command: ['node', 'src/crew.js'],
      entrypoint: { main: 'src/crew.js' },
    });
    const scripted = await detect({ 'package.json': JSON.stringify({ scripts: { crewd: 'node run.js --fast' } }) });
    expect(scripted.command).toEqual(['/bin/sh', '-c', 'node run.js --fast']);
  });

  it('crewd.json comes first, and the query sets the timeout', async () => {
    const response = await upload(
      ctx,
      deploymentId,
      project({ ...safeFiles, 'package.json': '{}' }),
      '?timeout_seconds=30',
    );
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({ entrypoint: { command: ['node', 'crew.mjs'] }, timeout_seconds: 30 });
  });
});

describe('versions', () => {
  it('command versions are ready at once, with the new fields', async () => {
    const response = await ctx.call('POST', `/v1/deployments/${deploymentId}/versions`, {
      body: { command: ['true'] },
    });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({
      source: 'command',
      status: 'ready',
      build_error: null,
      runtime: null,
      entrypoint: null,
      bundle: null,
    });
  });

  it('the bundle comes back as it was uploaded', async () => {
    const bundle = project(safeFiles);
    const version = (await upload(ctx, deploymentId, bundle)).json();
    const response = await ctx.call('GET', `/v1/deployments/${deploymentId}/versions/${version.id}/bundle`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/gzip');
    expect(Buffer.compare(response.rawPayload, bundle)).toBe(0);
    await waitForBuild(ctx, deploymentId, version.id);
  });

  it('another organization sees none of it', async () => {
    const org = await ctx.call('POST', '/v1/organizations', { body: { name: 'other' } });
    const otherKey = org.json().api_key.key;
    const version = (await upload(ctx, deploymentId, project(safeFiles))).json();
    for (const url of [
      `/v1/deployments/${deploymentId}/versions/${version.id}`,
      `/v1/deployments/${deploymentId}/versions/${version.id}/bundle`,
      `/v1/deployments/${deploymentId}/versions/${version.id}/build/events`,
      `/v1/deployments/${deploymentId}/variables`,
    ]) {
      expect((await ctx.call('GET', url, { key: otherKey })).statusCode, url).toBe(404);
    }
    await waitForBuild(ctx, deploymentId, version.id);
  });

  it('an unknown version is 404', async () => {
    const response = await ctx.call('GET', `/v1/deployments/${deploymentId}/versions/ver_nope`);
    expect(response.statusCode).toBe(404);
    expect(response.json().error.message).toBe('Version not found');
  });
});
