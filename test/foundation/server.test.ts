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

  // Three server processes start one after another: under a loaded machine each start takes seconds.
  it('keeps committed records across SIGKILL, and exits cleanly on SIGTERM', { timeout: 120_000 }, async () => {
    const first = await startServer({ ...backendEnv, BOOTSTRAP_API_KEY: KEY });
    const created = await api(first, 'POST', '/v1/deployments', { name: 'survivor' });
    expect(created.status).toBe(201);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');

    const second = await startServer({ ...backendEnv, BOOTSTRAP_API_KEY: KEY });
    const fetched = await api(second, 'GET', `/v1/deployments/${created.body.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body.name).toBe('survivor');
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(second.output()).toContain('shutting down');

    const third = await startServer({ ...backendEnv, BOOTSTRAP_API_KEY: KEY });
    expect((await api(third, 'GET', '/readyz')).status).toBe(200);
    third.child.kill('SIGINT');
    expect(await third.exited).toBe(0);
    // The key in BOOTSTRAP_API_KEY is the admin key: nothing to warn about.
    expect(third.output()).not.toContain('BOOTSTRAP_API_KEY is set but ignored');
  });

  it('writes JSON logs with request ids and never the key', async () => {
    const server = await startServer({ ...backendEnv, BOOTSTRAP_API_KEY: KEY });
    const created = await api(server, 'POST', '/v1/api-keys', { name: 'logged' });
    expect(created.status).toBe(201);
    await api(server, 'GET', '/v1/deployments', undefined, 'crewd_wrong_key_value');
    server.child.kill('SIGTERM');
    await server.exited;
    const lines = server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'));
    expect(lines.length).toBeGreaterThan(2);
    const requestLine = lines.map((line) => JSON.parse(line)).find((entry) => entry.req?.url === '/v1/api-keys');
    expect(requestLine?.reqId).toMatch(/^[0-9a-f-]{36}$/);
    const all = server.output();
    expect(all).not.toContain(KEY);
    expect(all).not.toContain(created.body.key as string);
    expect(all).not.toContain('crewd_wrong_key_value');
    expect(all.toLowerCase()).not.toContain('bearer');
  });
});

describe('the server process without BOOTSTRAP_API_KEY', () => {
  it('generates an admin key, prints it once, and it works', { timeout: 120_000 }, async () => {
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
      first.child.kill('SIGTERM');
      await first.exited;
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
    } finally {
      await database?.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('warns at start when BOOTSTRAP_API_KEY is set but another admin key exists', { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-server-'));
    const database = process.env.TEST_DATABASE_URL ? await createTestDatabase() : undefined;
    const env: Record<string, string> = database
      ? { DATABASE_URL: database.url as string, DATA_DIR: dataDir }
      : { DATA_DIR: dataDir };
    try {
      const first = await startServer({ ...env, BOOTSTRAP_API_KEY: KEY });
      first.child.kill('SIGTERM');
      await first.exited;
      expect(first.output()).not.toContain('BOOTSTRAP_API_KEY');

      // Organization default has its admin key, so the new bootstrap key is never created.
      const ignoredKey = 'an-ignored-bootstrap-key-0123';
      const second = await startServer({ ...env, BOOTSTRAP_API_KEY: ignoredKey });
      expect((await api(second, 'GET', '/v1/api-keys', undefined, ignoredKey)).status).toBe(401);
      second.child.kill('SIGTERM');
      await second.exited;
      const warnings = second
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.level === 40);
      expect(warnings.map((entry) => entry.msg)).toEqual([
        'BOOTSTRAP_API_KEY is set but ignored: organization "default" already has an admin key, and it is not this one. ' +
          'Use an existing admin key, or stop crewd and run `npx crewd admin-key` for a new one; then unset BOOTSTRAP_API_KEY',
      ]);
      expect(second.output()).not.toContain(ignoredKey);
    } finally {
      await database?.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
