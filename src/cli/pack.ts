import { existsSync, readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { create } from 'tar';
import { CliError } from './api.js';

/** Always left out of a bundle (CONTRACTS §8); .crewdignore cannot bring them back. */
const ALWAYS_LEFT_OUT = ['.git', 'node_modules', '.venv', '__pycache__'];

/**
 * Left out by default as likely secrets: a bundle is stored in the service's database and readable by every admin
 * key of the organization. `!pattern` in .crewdignore brings one back; the values belong in deployment variables.
 */
export const SECRETS_LEFT_OUT = [
  '.env',
  '.env.*',
  '*.pem',
  '*.key',
  '*.p12',
  '*.pfx',
  'id_rsa*',
  'id_dsa*',
  'id_ecdsa*',
  'id_ed25519*',
  '.npmrc',
  '.pypirc',
  '.netrc',
  '.ssh/',
  '.aws/',
];

type Matcher = (relative: string, isDir: boolean) => boolean;

interface Rule {
  matches: Matcher;
  /** What a match decides: left out, or (a `!pattern`) kept. */
  leaveOut: boolean;
  kind: 'always' | 'secret' | 'crewdignore';
}

/** A .crewdignore pattern as a test of a path relative to the project (gitignore-like, a subset). */
function matcher(pattern: string): Matcher {
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

function crewdignoreRule(line: string): Rule {
  const keep = line.startsWith('!');
  return { matches: matcher(keep ? line.slice(1) : line), leaveOut: !keep, kind: 'crewdignore' };
}

/** The rules in order: the last one that matches a path decides, except that what is always left out stays out. */
export function ignoreRules(dir: string): Rule[] {
  const file = path.join(dir, '.crewdignore');
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
  return [
    ...SECRETS_LEFT_OUT.map((pattern): Rule => ({ matches: matcher(pattern), leaveOut: true, kind: 'secret' })),
    ...lines
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'))
      .map(crewdignoreRule),
    ...ALWAYS_LEFT_OUT.map((pattern): Rule => ({ matches: matcher(pattern), leaveOut: true, kind: 'always' })),
  ];
}

/** The rule that decides about a path, if any does. */
function decidingRule(rules: Rule[], relative: string, isDir: boolean): Rule | undefined {
  const always = rules.find((rule) => rule.kind === 'always' && rule.matches(relative, isDir));
  return always ?? rules.findLast((rule) => rule.matches(relative, isDir));
}

export interface PackOptions {
  /** Told each path left out as a likely secret (a folder with a trailing `/`). */
  onSecretLeftOut?: (relative: string) => void;
}

/** Packs a project folder as a gzipped tar, leaving out what is always left out, likely secrets and .crewdignore's. */
export async function packProject(dir: string, options: PackOptions = {}): Promise<Buffer> {
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
        const rule = decidingRule(rules, relative, isDir);
        if (rule?.kind === 'secret') options.onSecretLeftOut?.(isDir ? `${relative}/` : relative);
        return !rule?.leaveOut;
      },
    },
    ['.'],
  );
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
