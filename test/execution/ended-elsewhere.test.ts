import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalEventBus } from '../../src/events/bus.js';
import { createEndRecorder } from '../../src/run-record/end-recorder.js';
import { follow, untilStored } from '../run-record/unstored-events.js';
import {
  createRunContext,
  crew,
  dataOf,
  deploy,
  FAST_TIMINGS,
  processGone,
  type RunContext,
  readStream,
  startRun,
  until,
} from '../runs/helpers.js';

/**
 * A run whose process runs here, ended by another instance whose announcement of the end its streams here did not
 * hear (a stream subscribed after it; here the other instance is an end recorder publishing to a bus of its own).
 * Once this instance learns of the end (its housekeeping tick; on PostgreSQL the `stopRequested` signal too) its
 * streams complete, and new ones read the end from the store, while the process is still stopping (its runner
 * outlives SIGTERM), not at their first quiet look (long after this test's time here).
 */
describe('a run ended elsewhere whose end its owner’s streams did not hear', () => {
  let ctx: RunContext;
  let deploymentId: string;
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-ended-elsewhere-'));
  const runners: number[] = [];

  beforeAll(async () => {
    // The runner reads its go-files in a folder of the test, which the sandbox by design does not show it.
    ctx = await createRunContext(
      { RUNNER_SANDBOX: 'off' },
      { ...FAST_TIMINGS, keepaliveMs: 600_000, killGraceMs: 600_000 },
    );
    deploymentId = (await deploy(ctx, crew('bursts.mjs'))).deploymentId;
  });
  afterAll(async () => {
    for (const pid of runners) if (!processGone(pid)) process.kill(pid, 'SIGKILL');
    await ctx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const db = () => ctx.database.handle.db;

  it('the owner’s streams get the end when it learns of it, before the process is gone', async () => {
    const runDir = mkdtempSync(path.join(dir, 'run-'));
    const { run_id: runId } = await startRun(ctx, deploymentId, {
      dir: runDir,
      bursts: 1,
      size: 2,
      hold: true,
      linger: true,
    });
    const url = `${ctx.baseUrl}/v1/runs/${runId}/events`;
    const client = follow(url);
    await client.reached(1);
    writeFileSync(path.join(runDir, 'go-1'), '');
    // The ticks stored: the end is numbered after them, and the runner reads SIGTERM from here on.
    await untilStored(db(), runId, 3);

    const elsewhere = createEndRecorder({
      db: db(),
      bus: createLocalEventBus(),
      logger: pino({ level: 'silent' }),
      hooks: [],
      signals: { emit: () => {} },
    });
    const canceled = { status: 'canceled' as const, output: null, error: null };
    expect(await elsewhere.end({ runId, from: ['running'], outcome: canceled, seq: 'next' })).not.toBeNull();

    // The owner learned of the end and sent SIGTERM; the runner lingers.
    const terminated = path.join(runDir, 'terminated');
    const pid = await until(async () => existsSync(terminated) && Number(readFileSync(terminated, 'utf8')));
    runners.push(pid);
    const { messages } = await client.done;
    const fresh = await readStream(url);
    expect(processGone(pid)).toBe(false);

    expect(messages.filter((message) => message.data !== undefined).map((message) => message.id)).toEqual([
      '1',
      '2',
      '3',
      '4',
      undefined,
    ]);
    expect(dataOf(messages).map((data) => data.type)).toEqual([
      'run.started',
      'tick',
      'tick',
      'run.canceled',
      'complete',
    ]);
    expect(dataOf(fresh.messages)).toEqual([{ type: 'complete', status: 'canceled', output: null, error: null }]);
  });
});
