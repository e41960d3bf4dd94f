import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRunContext,
  crew,
  deploy,
  processGone,
  type RunContext,
  readStream,
  runProcesses,
  startRun,
  until,
  waitForRun,
} from '../runs/helpers.js';

/** Pids of this process's runner-spawner helpers (children running spawner-helper.cjs). */
function spawnerHelpers(): number[] {
  const table = execFileSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' });
  return table
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([, ppid, ...args]) => Number(ppid) === process.pid && args.join(' ').includes('spawner-helper.cjs'))
    .map(([pid]) => Number(pid));
}

describe('the runner spawner', () => {
  let ctx: RunContext;
  beforeAll(async () => {
    ctx = await createRunContext({ DATA_DIR: mkdtempSync(path.join(tmpdir(), 'crewd-spawner-')) });
  });
  afterAll(async () => {
    await ctx.close();
    rmSync(ctx.config.dataDir, { recursive: true, force: true });
  });

  it('when its helper dies, fails the runs it started as lost, stops their processes, and starts the next run', async () => {
    const { deploymentId } = await deploy(ctx, crew('slow.mjs'));
    const { run_id } = await startRun(ctx, deploymentId, { interval_ms: 20 });
    await readStream(`${ctx.baseUrl}/v1/runs/${run_id}/events?last_event_id=0`, {
      stopWhen: (message) => (message.data as { type?: string } | undefined)?.type === 'log',
    });
    // Found by CREWD_RUN_ID: a pid the crew reports is its own namespace's when sandboxed.
    const runnerPids = runProcesses(run_id);
    expect(runnerPids.length).toBeGreaterThan(0);
    const [helper] = spawnerHelpers();
    expect(helper).toBeTypeOf('number');
    process.kill(helper as number, 'SIGKILL');

    const lost = await waitForRun(ctx, run_id);
    expect(lost.status).toBe('failed');
    expect(lost.error_message).toBe('Runner lost: its exit status went with the runner spawner');
    await until(() => runnerPids.every((pid) => processGone(pid)));

    const { deploymentId: next } = await deploy(ctx, crew('trivial.mjs'));
    const after = await waitForRun(ctx, (await startRun(ctx, next)).run_id);
    expect(after.status).toBe('succeeded');
    expect(spawnerHelpers()).not.toContain(helper);
  });
});
