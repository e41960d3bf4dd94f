import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/auth/keys.js';
import { lockDataDir } from '../../src/data-dir-lock.js';
import { connectDatabase } from '../../src/db/connect.js';
import { CLI_TEST_TIMEOUT, runCrewd } from '../cli/helpers.js';

const SERVER = path.resolve(import.meta.dirname, '../../src/server.ts');
const TSX = path.resolve(import.meta.dirname, '../../node_modules/.bin/tsx');
const made: string[] = [];
const folder = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-admin-key-'));
  made.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

describe('a lost admin key', () => {
  it(
    '`crewd admin-key` makes a new admin key in the service’s own database',
    async () => {
      const dataDir = folder();
      const result = await runCrewd(folder(), ['admin-key'], { DATA_DIR: dataDir });
      expect(result.stderr).toContain('A new admin key');
      expect(result.code).toBe(0);
      const key = result.stdout.trim();
      expect(key).toMatch(/^crewd_/);
      const database = await connectDatabase({ dataDir });
      try {
        const row = await database.db
          .selectFrom('api_keys')
          .select(['org_id', 'role'])
          .where('key_hash', '=', hashSecret(key))
          .executeTakeFirst();
        expect(row).toEqual({ org_id: 'org_default', role: 'admin' });
      } finally {
        await database.close();
      }
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    'says to stop the service when it holds the embedded database',
    async () => {
      const dataDir = folder();
      const lock = lockDataDir(dataDir);
      try {
        const result = await runCrewd(folder(), ['admin-key'], { DATA_DIR: dataDir });
        expect(result.code).toBe(2);
        expect(result.stderr).toContain('stop crewd');
      } finally {
        lock.release();
      }
    },
    CLI_TEST_TIMEOUT,
  );

  it(
    'refuses an organization that does not exist',
    async () => {
      const result = await runCrewd(folder(), ['admin-key', '--organization', 'nope'], { DATA_DIR: folder() });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('no organization is named or has the id "nope"');
    },
    CLI_TEST_TIMEOUT,
  );
});

describe('a database out of reach', () => {
  it(
    'is one line naming host and port, with nothing before it claiming success',
    async () => {
      const child = spawn(TSX, [SERVER], {
        env: {
          PATH: process.env.PATH ?? '',
          DATA_DIR: folder(),
          DATABASE_URL: 'postgres://postgres@127.0.0.1:1/crewd',
        },
      });
      let output = '';
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
      const code = await new Promise((resolve) => child.on('close', resolve));
      expect(code).toBe(1);
      expect(output.trim().split('\n')).toEqual([
        expect.stringContaining('cannot reach PostgreSQL at 127.0.0.1:1/crewd (ECONNREFUSED)'),
      ]);
    },
    CLI_TEST_TIMEOUT,
  );
});
