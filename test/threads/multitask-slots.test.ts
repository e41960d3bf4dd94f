import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext, until, waitForRun } from '../runs/helpers.js';
import { lockFolder, threadRun } from './multitask-helpers.js';

describe('threads: queued runs while every slot is taken', () => {
  let ctx: RunContext;
  let deploymentId: string;
  let slowId: string;
  const locks = lockFolder();

  beforeAll(async () => {
    // exclusive.mjs shares a lock folder between runs, which the sandbox by design does not allow.
    ctx = await createRunContext({ MAX_CONCURRENT_RUNS: '1', RUNNER_SANDBOX: 'off' });
    deploymentId = (await deploy(ctx, crew('exclusive.mjs'))).deploymentId;
    slowId = (await deploy(ctx, crew('slow.mjs'))).deploymentId;
  });
  afterAll(async () => {
    await ctx.close();
    locks.remove();
  });

  it('deleting a thread with queued runs cancels them; a running run still makes it 409', async () => {
    const blocker = (await ctx.call('POST', '/v1/runs', { body: { deployment_id: slowId } })).json();
    expect(blocker.status).toBe('running');
    const id = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json().thread_id;
    const holder = await threadRun(ctx, id, { input: { lock_dir: locks.dir } });
    const queued = await threadRun(ctx, id, { input: { lock_dir: locks.dir }, multitask_strategy: 'enqueue' });
    expect([holder.json.status, queued.json.status]).toEqual(['pending', 'pending']);
    const removed = await ctx.call('DELETE', `/v1/threads/${id}`);
    expect(removed.statusCode).toBe(200);
    for (const runId of [holder.json.run_id, queued.json.run_id]) {
      expect((await ctx.call('GET', `/v1/runs/${runId}`)).json()).toMatchObject({
        status: 'canceled',
        thread_id: null,
      });
    }
    await ctx.call('POST', `/v1/runs/${blocker.run_id}/cancel`);

    const busy = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json().thread_id;
    const running = await threadRun(ctx, busy, { input: { lock_dir: locks.dir, ms: 60_000 } });
    await waitForRun(ctx, running.json.run_id, ['running']);
    const refused = await ctx.call('DELETE', `/v1/threads/${busy}`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.message).toBe(`Thread ${busy} is busy with run ${running.json.run_id}`);
    await ctx.call('POST', `/v1/runs/${running.json.run_id}/cancel`);
    // Its runner lets go of the lock as it exits.
    await until(async () => !existsSync(path.join(locks.dir, `${busy}.lock`)));
  });
});
