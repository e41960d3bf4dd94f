import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DataDirInUseError, LOCK_FILE, lockDataDir } from '../../src/data-dir-lock.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runServerToExit, startServer } from '../helpers/server-process.js';

const KEY = 'lock-test-bootstrap-key-0123456789';

function startTime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] as string;
}

/** A live process of another program, standing in for whoever holds a pid. */
function sleeper() {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  // 'exit' comes once Node has reaped it: its pid names no process from then on.
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { pid: child.pid as number, stop: () => child.kill('SIGKILL'), exited };
}

describe('one crewd per DATA_DIR (real server processes)', () => {
  let dataDir: string;
  let database: TestDatabase | undefined;
  let env: Record<string, string>;
  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-lock-'));
    env = { DATA_DIR: dataDir, BOOTSTRAP_API_KEY: KEY, RUNNER_SANDBOX: 'off' };
    if (process.env.TEST_DATABASE_URL) {
      database = await createTestDatabase();
      env.DATABASE_URL = database.url as string;
    }
  });
  afterAll(async () => {
    await database?.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses a second process at once, naming the folder and the holder; a SIGKILLed holder blocks nothing', async () => {
    const first = await startServer(env);
    try {
      const second = await runServerToExit(env);
      expect(second.code).toBe(1);
      expect(second.output.trim().split('\n')).toEqual([
        `DATA_DIR ${dataDir} is in use by crewd process ${first.child.pid} (lock file ${path.join(dataDir, LOCK_FILE)}); stop that process or choose another DATA_DIR`,
      ]);
    } finally {
      first.child.kill('SIGKILL');
      await first.exited;
    }
    expect(existsSync(path.join(dataDir, LOCK_FILE))).toBe(true);

    const third = await startServer(env);
    expect((await fetch(`${third.baseUrl}/readyz`)).status).toBe(200);
    third.child.kill('SIGTERM');
    expect(await third.exited).toBe(0);
    // A clean stop leaves no lock behind.
    expect(existsSync(path.join(dataDir, LOCK_FILE))).toBe(false);
  }, 60_000);
});

describe('lockDataDir', () => {
  let dataDir: string;
  const lockFile = () => path.join(dataDir, LOCK_FILE);
  const others: Array<() => void> = [];
  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-lock-unit-'));
  });
  afterEach(() => {
    for (const stop of others.splice(0)) stop();
    rmSync(lockFile(), { force: true });
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('is refused while the process named in the lock runs', () => {
    const holder = sleeper();
    others.push(holder.stop);
    writeFileSync(lockFile(), JSON.stringify({ pid: holder.pid, started: startTime(holder.pid), token: 't' }));
    expect(() => lockDataDir(dataDir)).toThrow(DataDirInUseError);
    expect(() => lockDataDir(dataDir)).toThrow(`is in use by crewd process ${holder.pid}`);
    expect(JSON.parse(readFileSync(lockFile(), 'utf8')).pid).toBe(holder.pid);
  });

  it('takes over a lock whose process is gone, or whose pid now belongs to another process', async () => {
    const dead = sleeper();
    dead.stop();
    await dead.exited;
    const reused = sleeper();
    others.push(reused.stop);
    for (const stale of [
      { pid: dead.pid, started: '1', token: 'dead' },
      { pid: reused.pid, started: '1', token: 'reused' },
      'not json at all',
    ]) {
      writeFileSync(lockFile(), typeof stale === 'string' ? stale : JSON.stringify(stale));
      const lock = lockDataDir(dataDir);
      expect(JSON.parse(readFileSync(lockFile(), 'utf8'))).toMatchObject({
        pid: process.pid,
        started: startTime(process.pid),
      });
      lock.release();
      expect(existsSync(lockFile())).toBe(false);
    }
  });

  it('releases only its own lock', () => {
    const lock = lockDataDir(dataDir);
    const holder = sleeper();
    others.push(holder.stop);
    const theirs = JSON.stringify({ pid: holder.pid, started: startTime(holder.pid), token: 'theirs' });
    writeFileSync(lockFile(), theirs);
    lock.release();
    expect(readFileSync(lockFile(), 'utf8')).toBe(theirs);
  });
});
