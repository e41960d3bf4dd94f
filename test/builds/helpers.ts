import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import type { RunContext } from '../runs/helpers.js';
import { until } from '../runs/helpers.js';

export interface TarEntry {
  path: string;
  body?: string | Buffer;
  type?: 'File' | 'Directory' | 'SymbolicLink' | 'Link' | 'CharacterDevice' | 'BlockDevice' | 'FIFO';
  linkpath?: string;
  mode?: number;
}

/** A gzipped tar written header by header, so that tests can make the unsafe entries tools refuse to write. */
export function tarball(entries: TarEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const body = entry.body === undefined ? Buffer.alloc(0) : Buffer.from(entry.body);
    const type = entry.type ?? 'File';
    const header = new Header({
      path: entry.path,
      type,
      size: type === 'File' ? body.length : 0,
      mode: entry.mode ?? (type === 'Directory' ? 0o755 : 0o644),
      linkpath: entry.linkpath ?? '',
      mtime: new Date(0),
      uid: 0,
      gid: 0,
    });
    const block = Buffer.alloc(512);
    header.encode(block);
    blocks.push(block);
    if (type === 'File' && body.length > 0) {
      blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

/** A tarball of files given as `{path: contents}`. */
export const project = (files: Record<string, string>) =>
  tarball(Object.entries(files).map(([file, body]) => ({ path: file, body })));

const PROBE_BACKEND = readFileSync(path.join(import.meta.dirname, 'fixtures/probe_backend.py'), 'utf8');

/**
 * A Python project installed as a package, whose build backend (code of the bundle, run by pip in a
 * build step) reports what it can reach into probe.json, after waiting for `targets.wait_for` if given.
 */
export function probeBundle(targets: Record<string, unknown>, extra: Record<string, string> = {}): Buffer {
  return project({
    'crewd.json': JSON.stringify({ runtime: 'python', command: ['python', '-c', 'pass'] }),
    'pyproject.toml':
      '[project]\nname = "probe"\nversion = "0.1.0"\n\n' +
      '[build-system]\nrequires = []\nbuild-backend = "probe_backend"\nbackend-path = ["."]\n',
    'probe_backend.py': PROBE_BACKEND,
    'targets.json': JSON.stringify(targets),
    ...extra,
  });
}

export const tempDataDir = () => mkdtempSync(path.join(tmpdir(), 'crewd-builds-'));

type Caller = Pick<RunContext, 'call'> & { app: RunContext['app'] };

export async function createDeployment(ctx: Pick<RunContext, 'call'>, name = 'crew'): Promise<string> {
  const response = await ctx.call('POST', '/v1/deployments', { body: { name } });
  if (response.statusCode !== 201) throw new Error(response.body);
  return response.json().id;
}

export function upload(ctx: Caller, deploymentId: string, bundle: Buffer, query = '') {
  return ctx.app.inject({
    method: 'POST',
    url: `/v1/deployments/${deploymentId}/versions${query}`,
    headers: { authorization: `Bearer test-admin-key-0123456789`, 'content-type': 'application/gzip' },
    payload: bundle,
  });
}

/** Polls a version until its build ended. */
export async function waitForBuild(
  ctx: Pick<RunContext, 'call'>,
  deploymentId: string,
  versionId: string,
  timeoutMs = 120_000,
) {
  return until(async () => {
    const version = (await ctx.call('GET', `/v1/deployments/${deploymentId}/versions/${versionId}`)).json();
    return version.status !== 'building' ? version : null;
  }, timeoutMs);
}
