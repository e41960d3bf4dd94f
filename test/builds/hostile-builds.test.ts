import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepEnvironments } from '../../src/builds/environment-cache.js';
import { runStep } from '../../src/builds/run-step.js';
import { CRASHED_BUILD_ERROR } from '../../src/builds/service.js';
import { createDirectSpawner } from '../../src/execution/direct-spawner.js';
import { instanceName } from '../../src/execution/instance-lease.js';
import { RUN_LIMITS } from '../../src/run-limits.js';
import { createKey } from '../helpers/app.js';
import { createRunContext, type RunContext, until } from '../runs/helpers.js';
import { createDeployment, project, tempDataDir, upload, waitForBuild } from './helpers.js';

/** What a build or an upload does to crewd itself (issue 28, items 3 and 6): none of it stops or stalls the service. */
let ctx: RunContext;
let dataDir: string;
let deploymentId: string;

beforeAll(async () => {
  dataDir = tempDataDir();
  ctx = await createRunContext({ DATA_DIR: dataDir });
  deploymentId = await createDeployment(ctx, 'hostile-builds');
});
afterAll(async () => ctx?.close());

const quick = { 'crewd.json': JSON.stringify({ runtime: 'node', command: ['node', 'crew.js'] }), 'crew.js': '' };

describe('a build step printing a line of 600 MiB', () => {
  // 600 MiB go through a pipe: on a loaded machine that takes a while.
  it('is logged capped as run output is, and crewd goes on', { timeout: 180_000 }, async () => {
    const scratch = mkdtempSync(path.join(tmpdir(), 'crewd-long-line-'));
    const launcher = createDirectSpawner();
    const lines: string[] = [];
    try {
      // Before the cap, readline gathered the line into one string: past 512 MiB, RangeError ended crewd.
      const script = 'head -c 629145600 /dev/zero | tr "\\0" x; echo; echo after';
      await runStep('printing', ['/bin/sh', '-c', script], scratch, {
        launcher,
        env: { PATH: '/usr/bin:/bin' },
        writable: [scratch],
        log: (message) => lines.push(message),
        deadline: Date.now() + 120_000,
      });
    } finally {
      await launcher.stop();
      rmSync(scratch, { recursive: true, force: true });
    }
    const long = lines.find((line) => line.startsWith('xxxx'));
    expect(long).toBe(
      `${'x'.repeat(RUN_LIMITS.truncatedHeadBytes)}… (line truncated: 629145600 bytes exceed the limit of ` +
        `${RUN_LIMITS.maxLineBytes} bytes per line)`,
    );
    expect(lines.at(-1)).toBe('after');
    expect((await ctx.call('GET', '/healthz', { key: null })).statusCode).toBe(200);
  });
});

describe("a member's upload", () => {
  it('is answered 403 before its body is read: the answer comes while the client is still sending', async () => {
    const member = await createKey(ctx, 'member-uploader', 'member');
    const url = new URL(`${ctx.baseUrl}/v1/deployments/${deploymentId}/versions`);
    const declared = 49 * 1024 * 1024;
    const request = http.request(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${member}`,
        'content-type': 'application/gzip',
        'content-length': String(declared),
      },
    });
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      request.on('response', (response) => {
        let body = '';
        response.on('data', (chunk) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      request.on('error', reject);
    });
    // One MiB of the 49 is sent; the rest only after the answer, which must not wait for it.
    request.write(Buffer.alloc(1024 * 1024));
    const { status, body } = await answered;
    request.destroy();
    expect(status).toBe(403);
    expect(JSON.parse(body).error).toEqual({
      code: 'forbidden',
      message: 'Managing deployments requires an admin API key',
    });
  });
});

describe('a build left `building` by a crash', () => {
  it('is failed at the next start with a build_error saying so', async () => {
    const version = (await upload(ctx, deploymentId, project(quick))).json();
    expect((await waitForBuild(ctx, deploymentId, version.id)).status).toBe('ready');
    const db = ctx.database.handle.db;
    // This installation's previous life, killed while it built: its lease has not even lapsed yet.
    const crashed = 'ins_crashed_previous_life';
    await db
      .insertInto('instances')
      .values({ id: crashed, name: instanceName(dataDir), expires_at: sql<Date>`now() + interval '1 hour'` })
      .execute();
    await db
      .updateTable('deployment_versions')
      .set({ status: 'building', build_instance_id: crashed })
      .where('id', '=', version.id)
      .execute();

    await ctx.closeApp();
    await ctx.restart();
    const ended = await until(async () => {
      const row = await db
        .selectFrom('deployment_versions')
        .select(['status', 'build_error'])
        .where('id', '=', version.id)
        .executeTakeFirstOrThrow();
      return row.status !== 'building' ? row : null;
    }, 60_000);
    expect(ended).toEqual({ status: 'failed', build_error: CRASHED_BUILD_ERROR });
    const events = await ctx.call('GET', `/v1/deployments/${deploymentId}/versions/${version.id}`);
    expect(events.json()).toMatchObject({ status: 'failed', build_error: CRASHED_BUILD_ERROR });
  });
});

describe("what a build step leaves in its organization's build cache", () => {
  it('is not followed by the sweep: a claims folder that is a link, a lock owner that is a FIFO', async () => {
    const cacheDir = mkdtempSync(path.join(tmpdir(), 'crewd-planted-cache-'));
    const elsewhere = mkdtempSync(path.join(tmpdir(), 'crewd-planted-target-'));
    try {
      writeFileSync(path.join(elsewhere, 'precious'), 'a file of the host');
      const orgDir = path.join(cacheDir, 'org_planted');
      const home = path.join(orgDir, 'a'.repeat(64));
      mkdirSync(home, { recursive: true });
      symlinkSync(elsewhere, path.join(home, '.claims'));
      const lockDir = path.join(orgDir, `${'b'.repeat(64)}.lock`);
      mkdirSync(lockDir);
      execFileSync('mkfifo', [path.join(lockDir, 'pid')]);

      const removed = await sweepEnvironments(cacheDir, dataDir, new Set());
      expect(removed).toEqual([home]);
      expect(readFileSync(path.join(elsewhere, 'precious'), 'utf8')).toBe('a file of the host');
      expect(existsSync(lockDir)).toBe(true);
    } finally {
      rmSync(cacheDir, { recursive: true, force: true });
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
