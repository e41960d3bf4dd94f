import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usingPostgres } from '../helpers/database.js';
import { follow, holdEventNumber, untilLockWaits } from '../run-record/unstored-events.js';
import { createRunContext, crew, dataOf, deploy, type RunContext, readStream } from '../runs/helpers.js';
import { threadRun } from './multitask-helpers.js';

/**
 * A thread's run displaced by an interrupting run while its process runs on this instance, with events its log had
 * published to streams but not stored yet: the displacing end stores them and numbers its run.canceled after every
 * one of them, so a live client gets it, as does one resuming at the last event it saw.
 */
describe('a run displaced from its thread while events its streams got are not stored yet', () => {
  let ctx: RunContext;
  let deploymentId: string;
  const dir = mkdtempSync(path.join(tmpdir(), 'crewd-displaced-stream-'));

  beforeAll(async () => {
    // The runner reads its go-files in a folder of the test, which the sandbox by design does not show it.
    ctx = await createRunContext({ RUNNER_SANDBOX: 'off' });
    deploymentId = (await deploy(ctx, crew('bursts.mjs'))).deploymentId;
  });
  afterAll(async () => {
    await ctx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const url = (runId: string) => `${ctx.baseUrl}/v1/runs/${runId}/events`;
  const db = () => ctx.database.handle.db;
  const storedEvents = (runId: string) =>
    db().selectFrom('run_events').select(['seq', 'type']).where('run_id', '=', runId).orderBy('seq').execute();

  it('interrupt: the final event comes after every event a live client got, and all of them are stored', async () => {
    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();
    const runDir = mkdtempSync(path.join(dir, 'run-'));
    const current = await threadRun(ctx, thread.thread_id, {
      input: { dir: runDir, bursts: 2, size: 3, hold: true },
    });
    expect(current.statusCode).toBe(202);
    const runId = current.json.run_id as string;
    const client = follow(url(runId));
    await client.reached(1);

    // On PostgreSQL the log's batch holding number 2 waits for the test, so from there on its events stay unstored,
    // whenever the interrupting run comes. On PGlite (one connection) the interrupt follows the second burst at once,
    // within the log's flush delay, so these events are still unstored too (a slow machine may store them first).
    const held = usingPostgres() ? await holdEventNumber(db(), runId, 2) : null;
    writeFileSync(path.join(runDir, 'go-1'), '');
    await client.reached(4);
    if (held) await untilLockWaits(db(), 1, held.pid);
    writeFileSync(path.join(runDir, 'go-2'), '');
    await client.reached(7);

    const next = threadRun(ctx, thread.thread_id, {
      input: { dir: runDir, bursts: 0 },
      multitask_strategy: 'interrupt',
    });
    if (held) {
      // The batch waits for the test, the interrupting run's lock of the displaced run for the batch.
      await untilLockWaits(db(), 2);
      await held.release();
    }
    expect((await next).statusCode).toBe(202);
    const { messages } = await client.done;

    const events = messages.filter((message) => message.data !== undefined);
    expect(events.map((message) => message.id)).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', undefined]);
    expect(dataOf(events).map((event) => event.type)).toEqual([
      'run.started',
      ...Array(6).fill('tick'),
      'run.canceled',
      'complete',
    ]);
    expect(await storedEvents(runId)).toEqual([
      { seq: 1, type: 'run.started' },
      ...[2, 3, 4, 5, 6, 7].map((seq) => ({ seq, type: 'tick' })),
      { seq: 8, type: 'run.canceled' },
    ]);
    // A client resuming at the last event it got gets the final one.
    const resumed = await readStream(url(runId), { headers: { 'last-event-id': '7' } });
    expect(resumed.messages.filter((message) => message.data !== undefined).map((message) => message.id)).toEqual([
      '8',
      undefined,
    ]);
  });
});
