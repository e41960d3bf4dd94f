import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runServerToExit, type ServerProcess, startServer } from '../helpers/server-process.js';

const KEY = 'server-test-bootstrap-key-42';

async function api(server: ServerProcess, method: string, url: string, body?: unknown, key = KEY) {
  const response = await fetch(`${server.baseUrl}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('the server process', () => {
  let dataDir: string;
  let database: TestDatabase | undefined;
  let backendEnv: Record<string, string>;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-server-'));
    // The same tests run on PostgreSQL when the suite does; otherwise on the embedded database.
    if (process.env.TEST_DATABASE_URL) {
      database = await createTestDatabase();
      backendEnv = { DATABASE_URL: database.url as string, DATA_DIR: dataDir };
    } else {
      backendEnv = { DATA_DIR: dataDir };
    }
  });
  afterAll(async () => {
    await database?.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('stops a bad configuration with one line naming the variable', async () => {
    const { code, output } = await runServerToExit({ PORT: 'eighty' });
    expect(code).toBe(1);
    expect(output.trim().split('\n')).toEqual([expect.stringContaining('PORT')]);
  });

  // Two server processes on one data folder prove four behaviours between them: each start costs seconds of CPU.
  it('keeps committed records across SIGKILL, exits cleanly on SIGTERM, and logs JSON with request ids and never a key', {
    timeout: 120_000,
  }, async () => {
    const first = await startServer({ ...backendEnv, BOOTSTRAP_API_KEY: KEY });
    const created = await api(first, 'POST', '/v1/deployments', { name: 'survivor' });
    expect(created.status).toBe(201);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    // A new data folder's admin key is BOOTSTRAP_API_KEY itself: nothing to warn about.
    expect(first.output()).not.toContain('BOOTSTRAP_API_KEY');

    const second = await startServer({ ...backendEnv, BOOTSTRAP_API_KEY: KEY });
    const fetched = await api(second, 'GET', `/v1/deployments/${created.body.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body.name).toBe('survivor');
    const key = await api(second, 'POST', '/v1/api-keys', { name: 'logged' });
    expect(key.status).toBe(201);
    await api(second, 'GET', '/v1/deployments', undefined, 'crewd_wrong_key_value');
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(second.output()).toContain('shutting down');
    // The key in BOOTSTRAP_API_KEY is the admin key: nothing to warn about on a restart either.
    expect(second.output()).not.toContain('BOOTSTRAP_API_KEY is set but ignored');
    expectJsonLogsWithoutSecrets(second.output(), [KEY, key.body.key as string, 'crewd_wrong_key_value']);
  });
});

function expectJsonLogsWithoutSecrets(output: string, secrets: string[]) {
  const lines = output.split('\n').filter((line) => line.startsWith('{'));
  expect(lines.length).toBeGreaterThan(2);
  const requestLine = lines.map((line) => JSON.parse(line)).find((entry) => entry.req?.url === '/v1/api-keys');
  expect(requestLine?.reqId).toMatch(/^[0-9a-f-]{36}$/);
  for (const secret of secrets) expect(output).not.toContain(secret);
  expect(output.toLowerCase()).not.toContain('bearer');
}

describe('the server process without BOOTSTRAP_API_KEY', () => {
  // One data folder through three starts: the first generates the key, the second must not print one again, the
  // third's BOOTSTRAP_API_KEY is not the admin key the first made.
  it('generates an admin key, prints it once, and it works; warns when BOOTSTRAP_API_KEY comes after', {
    timeout: 180_000,
  }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-server-'));
    const database = process.env.TEST_DATABASE_URL ? await createTestDatabase() : undefined;
    const env: Record<string, string> = database
      ? { DATABASE_URL: database.url as string, DATA_DIR: dataDir }
      : { DATA_DIR: dataDir };
    try {
      const first = await startServer(env);
      const match = /(crewd_[0-9a-z]{40})/.exec(first.output());
      expect(match).not.toBeNull();
      const key = match?.[1] as string;
      expect((await api(first, 'GET', '/v1/api-keys', undefined, key)).status).toBe(200);
      // SIGINT (Ctrl-C) stops as cleanly as SIGTERM.
      first.child.kill('SIGINT');
      expect(await first.exited).toBe(0);
      const lines = first
        .output()
        .split('\n')
        .filter((line) => line.includes(key));
      expect(lines).toHaveLength(1);
      expect(lines[0]?.startsWith('{')).toBe(false);

      const second = await startServer(env);
      expect(second.output()).not.toMatch(/crewd_[0-9a-z]{40}/);
      second.child.kill('SIGTERM');
      await second.exited;
      expect(second.output()).not.toContain('BOOTSTRAP_API_KEY');

      // Organization default has its admin key, so the new bootstrap key is never created.
      const ignoredKey = 'an-ignored-bootstrap-key-0123';
      const third = await startServer({ ...env, BOOTSTRAP_API_KEY: ignoredKey });
      expect((await api(third, 'GET', '/v1/api-keys', undefined, ignoredKey)).status).toBe(401);
      third.child.kill('SIGTERM');
      await third.exited;
      const warnings = third
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.level === 40);
      expect(warnings.map((entry) => entry.msg)).toEqual([
        'BOOTSTRAP_API_KEY is set but ignored: organization "default" already has an admin key, and it is not this one. ' +
          'Use an existing admin key, or stop crewd and run `npx crewd admin-key` for a new one; then unset BOOTSTRAP_API_KEY',
      ]);
      expect(third.output()).not.toContain(ignoredKey);
    } finally {
      await database?.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
