import { existsSync, readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { create } from 'tar';
import { CliError } from './api.js';

/** Always left out of a bundle (CONTRACTS §8). */
const ALWAYS_LEFT_OUT = ['.git', 'node_modules', '.venv', '__pycache__'];

/** A .crewdignore line as a test of a path relative to the project (gitignore-like, a subset). */
function ignoreRule(pattern: string): (relative: string, isDir: boolean) => boolean {
  const dirOnly = pattern.endsWith('/');
  let body = pattern.replace(/\/+$/, '');
  const anchored = body.startsWith('/') || body.includes('/');
  body = body.replace(/^\/+/, '');
  const source = body
    .split('**')
    .map((part) =>
      part
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replaceAll('*', '[^/]*')
        .replaceAll('?', '[^/]'),
    )
    .join('.*');
  const regex = new RegExp(anchored ? `^${source}(/.*)?$` : `(^|/)${source}(/.*)?$`);
  return (relative, isDir) => (!dirOnly || isDir || relative.includes('/')) && regex.test(relative);
}

export function ignoreRules(dir: string): Array<(relative: string, isDir: boolean) => boolean> {
  const file = path.join(dir, '.crewdignore');
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
  const patterns = [
    ...ALWAYS_LEFT_OUT,
    ...lines.map((line) => line.trim()).filter((line) => line && !line.startsWith('#')),
  ];
  return patterns.map(ignoreRule);
}

/** Packs a project folder as a gzipped tar, leaving out what is always left out and what .crewdignore lists. */
export async function packProject(dir: string): Promise<Buffer> {
  const info = await stat(dir).catch(() => null);
  if (!info?.isDirectory()) throw new CliError(`${dir} is not a folder: give the project folder to deploy`);
  const rules = ignoreRules(dir);
  const chunks: Buffer[] = [];
  const stream = create(
    {
      gzip: true,
      cwd: dir,
      portable: true,
      filter: (entryPath, entryStat) => {
        const relative = entryPath.replace(/^\.\/?/, '');
        if (relative === '') return true;
        const isDir = 'isDirectory' in entryStat && entryStat.isDirectory();
        return !rules.some((rule) => rule(relative, isDir));
      },
    },
    ['.'],
  );
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
