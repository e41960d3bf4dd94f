import { chmodSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findOnPath } from '../../src/program-search.js';
import { pythonOnPath } from '../../src/python-on-path.js';

const folder = mkdtempSync(path.join(tmpdir(), 'crewd-python-on-path-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('the python3 a PATH names', () => {
  it.runIf(findOnPath('python3', process.env.PATH ?? '') !== null)(
    'is the interpreter itself and its installation, through any version manager shim',
    async () => {
      const python = await pythonOnPath({ PATH: process.env.PATH ?? '' });
      expect(python).not.toBeNull();
      const { executable, installation } = python as { executable: string; installation: string };
      expect(executable).not.toContain('/shims/');
      expect(realpathSync(executable).startsWith(installation)).toBe(true);
    },
  );

  it('is asked once per PATH: a second question gets the first answer', async () => {
    // A python3 that counts how often it is run, alone on its PATH.
    const bin = path.join(folder, 'counting');
    const runs = path.join(folder, 'runs');
    writeFileSync(path.join(folder, 'python3'), `#!/bin/sh\necho run >> ${runs}\necho ${bin}/python3\necho ${bin}\n`);
    chmodSync(path.join(folder, 'python3'), 0o755);
    const env = { PATH: `${folder}:/usr/bin:/bin` };
    const [first, second] = await Promise.all([pythonOnPath(env), pythonOnPath(env)]);
    const third = await pythonOnPath({ ...env, OTHER: 'the same PATH' });
    expect(first).toEqual({ executable: `${bin}/python3`, installation: bin });
    expect([second, third]).toEqual([first, first]);
    expect(readFileSync(runs, 'utf8')).toBe('run\n');
  });

  it('is none where PATH has no python3', async () => {
    expect(await pythonOnPath({ PATH: path.join(folder, 'empty') })).toBeNull();
  });
});
