import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const CLI = path.resolve(import.meta.dirname, '../../bin/crewd.mjs');
const LOG_LOADS = path.resolve(import.meta.dirname, 'fixtures/log-package-loads.mjs');

/** The packages `crewd ARGS` loads, by name. */
function packagesLoaded(args: string[]): Set<string> {
  const result = spawnSync(process.execPath, ['--import', LOG_LOADS, CLI, ...args], {
    env: { PATH: process.env.PATH ?? '' },
    encoding: 'utf8',
  });
  expect(result.status, result.stderr).toBe(0);
  const names = [...result.stderr.matchAll(/^module loaded: .*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)];
  return new Set(names.map((match) => match[1] as string));
}

describe('crewd command start', () => {
  it('loads no database package for a command that talks to the API (they load only for admin-key)', () => {
    const loaded = packagesLoaded(['deployments', '--help']);
    expect(loaded).toContain('commander');
    for (const name of ['pg', 'kysely', '@electric-sql/pglite', 'zod']) expect(loaded).not.toContain(name);
  });
});
