import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unpackBundle } from '../../src/builds/unpack.js';
import { createRunContext, type RunContext } from '../runs/helpers.js';
import { createDeployment, type TarEntry, tarball, tempDataDir, upload, waitForBuild } from './helpers.js';

/**
 * Bundles made by an attacker (issue 28, item 2): links the kernel resolves out of the folder,
 * links to a device and to a FIFO, and a gzip bomb. Each is refused at upload, before anything is
 * stored or built, and the service keeps answering.
 */
let ctx: RunContext;
let dataDir: string;
let outside: string;
let deploymentId: string;

const crewdJson = JSON.stringify({ runtime: 'node', command: ['node', 'crew.js'] });
const SECRET = 'crewd-secret-of-another-organization';

/** `y -> .` then `name -> y/y/…/../../…/<absolute path>`: inside the folder by its letters, not by the kernel's reading. */
function escapingLink(name: string, absolute: string): TarEntry[] {
  const depth = 16;
  const target = `${'y/'.repeat(depth)}${'../'.repeat(depth)}${absolute.replace(/^\//, '')}`;
  return [
    { path: 'crewd.json', body: crewdJson },
    { path: 'package.json', body: JSON.stringify({ name: 'x', dependencies: { a: '1.0.0' } }) },
    { path: 'y', type: 'SymbolicLink', linkpath: '.' },
    { path: name, type: 'SymbolicLink', linkpath: target },
  ];
}

/** Every file under `folder` (links not followed), for looking for the secret. */
function filesUnder(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

async function expectRefused(bundle: Buffer, message: RegExp): Promise<void> {
  const response = await upload(ctx, deploymentId, bundle);
  expect(response.statusCode, response.body).toBe(400);
  expect(response.json().error).toMatchObject({ code: 'bad_request' });
  expect(response.json().error.message).toMatch(message);
  const health = await ctx.call('GET', '/healthz', { key: null });
  expect(health.statusCode).toBe(200);
}

beforeAll(async () => {
  dataDir = tempDataDir();
  outside = mkdtempSync(path.join(tmpdir(), 'crewd-outside-'));
  writeFileSync(path.join(outside, 'secret.txt'), SECRET);
  ctx = await createRunContext({ DATA_DIR: dataDir });
  deploymentId = await createDeployment(ctx, 'hostile');
});
afterAll(async () => {
  await ctx?.close();
  rmSync(outside, { recursive: true, force: true });
});

describe('links are followed as the kernel follows them', () => {
  it('refuses a link whose `..` climb out through another link, and no build reads its target', async () => {
    const secret = path.join(outside, 'secret.txt');
    await expectRefused(
      tarball(escapingLink('package-lock.json', secret)),
      /symbolic link "package-lock\.json" -> "y\/y\/.*": it goes through the link "y"/,
    );
    const leaked = filesUnder(dataDir).filter((file) => readFileSync(file, 'utf8').includes(SECRET));
    expect(leaked).toEqual([]);
  });

  it('unpacking refuses it too, and leaves nothing behind', async () => {
    const into = path.join(mkdtempSync(path.join(tmpdir(), 'crewd-unpack-')), 'project');
    const bundle = tarball(escapingLink('package-lock.json', path.join(outside, 'secret.txt')));
    await expect(unpackBundle(bundle, into)).rejects.toThrow(/"package-lock\.json" -> .*: it goes through the link/);
    expect(readdirSync(path.dirname(into))).toEqual([]);
  });

  it('refuses a link to /dev/zero and to a FIFO outside the folder', async () => {
    await expectRefused(tarball(escapingLink('package-lock.json', '/dev/zero')), /"package-lock\.json" -> /);
    const fifo = path.join(outside, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(statSync(fifo).isFIFO()).toBe(true);
    await expectRefused(tarball(escapingLink('requirements.txt', fifo)), /"requirements\.txt" -> /);
  });

  it('refuses links that leave, lead nowhere, to a link, or through a file; keeps those that stay inside', async () => {
    const base: TarEntry[] = [
      { path: 'crewd.json', body: crewdJson },
      { path: 'crew.js', body: '' },
    ];
    const link = (at: string, linkpath: string): TarEntry => ({ path: at, type: 'SymbolicLink', linkpath });
    await expectRefused(tarball([...base, link('a', 'missing')]), /"a" -> "missing": it leads to "missing", which/);
    await expectRefused(tarball([...base, link('a', '..')]), /"a" -> "\.\.": it leads outside the bundle/);
    await expectRefused(tarball([...base, link('a', 'b'), link('b', 'a')]), /"a" -> "b": it goes through the link "b"/);
    await expectRefused(tarball([...base, link('a', 'crew.js/..')]), /through "crew\.js", a file/);
    await expectRefused(tarball([...base, link('d', '.'), { path: 'd/x', body: '' }]), /"d\/x" lies under "d"/);
    await expectRefused(tarball([...base, { path: 'crew.js', body: 'again' }]), /"crew\.js" appears twice/);
    const inside = await upload(
      ctx,
      deploymentId,
      tarball([...base, { path: 'lib/x', body: '' }, link('main.js', 'lib/../crew.js')]),
    );
    expect(inside.statusCode, inside.body).toBe(201);
    const built = await waitForBuild(ctx, deploymentId, inside.json().id);
    expect(built.status, built.build_error).toBe('ready');
  });
});

describe('project files naming what lies outside', () => {
  it('refuses langgraph.json dependencies that leave the bundle', () =>
    expectRefused(
      tarball([
        { path: 'langgraph.json', body: JSON.stringify({ graphs: { a: './a.py:graph' }, dependencies: ['../lib'] }) },
        { path: 'a.py', body: '' },
      ]),
      /langgraph\.json: dependencies: "\.\.\/lib" lies outside the bundle/,
    ));
});

describe('a gzip bomb', () => {
  it('is refused while inflating, with memory bounded far below what it inflates to', async () => {
    // A small project, then 2 GiB of zeros after the archive's end: 64 MiB gzip members, repeated.
    const header = Buffer.alloc(512);
    new Header({ path: 'crewd.json', type: 'File', size: crewdJson.length, mode: 0o644, mtime: new Date(0) }).encode(
      header,
    );
    const start = gzipSync(Buffer.concat([header, Buffer.from(crewdJson), Buffer.alloc(512 - crewdJson.length)]));
    const zeros = gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });
    const inflatedBytes = 32 * 64 * 1024 * 1024;
    const bomb = Buffer.concat([start, ...Array.from({ length: 32 }, () => zeros)]);
    expect(bomb.length).toBeLessThan(50 * 1024 * 1024);

    const before = process.memoryUsage.rss();
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 5);
    try {
      await expectRefused(bomb, /more than 640 MiB once inflated/);
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, process.memoryUsage.rss());
    expect(peak - before).toBeLessThan(inflatedBytes / 8);
  });

  it('a tar gzipped twice is refused before the parser would inflate the inner one', async () => {
    await expectRefused(gzipSync(tarball([{ path: 'crewd.json', body: crewdJson }])), /gzipped twice/);
  });
});
