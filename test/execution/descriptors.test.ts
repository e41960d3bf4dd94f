import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { until } from '../helpers/poll.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Python lists its own descriptors with where they lead; the listing's own folder is closed (and
 * so left out) by the time each entry is read.
 */
const LIST_DESCRIPTORS = [
  '/usr/bin/python3',
  '-I',
  '-S',
  '-c',
  `import json, os
fds = []
for name in sorted(os.listdir("/proc/self/fd"), key=int):
    try:
        fds.append(name + "=" + os.readlink("/proc/self/fd/" + name))
    except OSError:
        pass
print(json.dumps({"type": "run.completed", "data": {"output": {"fds": fds}}}))`,
];

/**
 * A runner gets standard input, output and error, and no other descriptor: none of crewd's, nor
 * any crewd inherited from what started it. crewd runs as a real process here, started by a shell
 * that leaves it a descriptor of its own.
 */
describe('descriptors a runner gets', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-fds-'));
  let database: TestDatabase | null = null;
  let crewd: ChildProcess;
  let baseUrl = '';
  let output = '';

  const call = async (method: string, url: string, body?: unknown) => {
    const response = await fetch(`${baseUrl}${url}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    // The embedded database lives in the process's DATA_DIR; PostgreSQL gets a database of its own.
    if (usingPostgres()) database = await createTestDatabase();
    // The shell leaves descriptor 100 open across its exec, as shells and supervisors may.
    crewd = spawn('/bin/bash', ['-c', 'exec "$0" --import tsx src/server.ts 100</dev/null', process.execPath], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
        BOOTSTRAP_API_KEY: ADMIN_KEY,
        DATA_DIR: dataDir,
        ...(database?.url ? { DATABASE_URL: database.url } : {}),
        ...(process.env.RUNNER_SANDBOX ? { RUNNER_SANDBOX: process.env.RUNNER_SANDBOX } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    crewd.stdout?.on('data', (chunk) => {
      output += chunk;
    });
    crewd.stderr?.on('data', (chunk) => {
      output += chunk;
    });
    await until(() => /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.test(output), 60_000);
    baseUrl = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1] ?? '';
  }, 90_000);

  afterAll(async () => {
    if (crewd && crewd.exitCode === null) {
      const exited = new Promise((resolve) => crewd.once('exit', resolve));
      crewd.kill('SIGTERM');
      await exited;
    }
    await database?.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('are 0, 1 and 2 only', async () => {
    const deployment = await call('POST', '/v1/deployments', { name: 'fds' });
    const deploymentId = deployment.json.id as string;
    const version = await call('POST', `/v1/deployments/${deploymentId}/versions`, {
      command: LIST_DESCRIPTORS,
      environment: 'production',
    });
    expect(version.status).toBe(201);
    const run = await call('POST', '/v1/runs', { deployment_id: deploymentId, input: {} });
    const runId = run.json.run_id as string;
    let done: Record<string, unknown> = {};
    await until(async () => {
      done = (await call('GET', `/v1/runs/${runId}`)).json;
      return ['succeeded', 'failed', 'canceled'].includes(done.status as string);
    }, 30_000);
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    const fds = (done.output as { fds: string[] }).fds;
    expect(
      fds.map((entry) => entry.split('=')[0]),
      fds.join(' '),
    ).toEqual(['0', '1', '2']);
  });
});
