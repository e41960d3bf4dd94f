import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LaunchedProcess, ProcessLauncher } from '../../src/execution/launcher.js';
import { createSparePool, type SparePool } from '../../src/execution/sandbox-spares.js';
import { createSpawner } from '../../src/execution/spawner.js';
import { createLogger } from '../../src/logger.js';
import type { SpareShape } from '../../src/sandbox/types.js';

/**
 * A shape whose spare is a plain shell (the pool's own behaviour, apart from bwrap, which test/sandbox/spares.test.ts
 * covers): it reads its line, then prints the line, its pid and what follows on its input.
 */
function shellShape(key: string): SpareShape {
  return {
    key,
    spare: (folder) => ({
      command: ['sh', '-c', 'read -r line; echo "$line $$"; exec cat'],
      cwd: folder,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    }),
    line: `became ${key}`,
    scratch: null,
    fresh: () => {
      throw new Error('the pool never makes a fresh process');
    },
    stamp: () => 'same files',
  };
}

async function outputOf(launched: LaunchedProcess): Promise<string> {
  let text = '';
  launched.stdout.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  const ended = new Promise((resolve) => launched.stdout.once('end', resolve));
  await launched.exit;
  await ended;
  return text;
}

describe('spare pool: the next run of a shape finds its spare made', () => {
  let runsDir: string;
  let launcher: ProcessLauncher;
  let pool: SparePool;

  beforeEach(() => {
    runsDir = path.join(mkdtempSync('/var/tmp/crewd-spare-pool-'), 'runs');
    mkdirSync(runsDir);
    launcher = createSpawner(createLogger('silent'));
    launcher.start();
    pool = createSparePool(launcher, { runsDir, logger: createLogger('silent') });
  });
  afterEach(async () => {
    await pool.stop();
    await launcher.stop();
    rmSync(path.dirname(runsDir), { recursive: true, force: true });
  });

  it('makes the next spare as one is taken, and a run that comes while it is being made waits for it', async () => {
    const shape = shellShape('version-a');
    // Nothing waits yet: the first run starts without a spare, and one is made for the next.
    expect(await pool.take(shape, 'first\n')).toBeNull();
    // Taken at once, while that spare is still being made (no process of the shape has ended in between).
    const second = await pool.take(shape, 'second\n');
    expect(second).not.toBeNull();
    // And taking it made the one after it.
    const third = await pool.take(shape, 'third\n');
    expect(third).not.toBeNull();
    expect(third?.pid).not.toBe(second?.pid);
    for (const [launched, input] of [
      [second, 'second'],
      [third, 'third'],
    ] as const) {
      const [line, rest] = (await outputOf(launched as LaunchedProcess)).split('\n');
      expect(line).toMatch(/^became version-a \d+$/);
      expect(rest).toBe(input);
    }
  });

  it('keeps shapes apart: a spare of one version is never taken by another', async () => {
    expect(await pool.take(shellShape('version-a'), 'a\n')).toBeNull();
    expect(await pool.take(shellShape('version-b'), 'b\n')).toBeNull();
    const b = await pool.take(shellShape('version-b'), 'b again\n');
    expect((await outputOf(b as LaunchedProcess)).split('\n')[0]).toMatch(/^became version-b /);
  });
});
