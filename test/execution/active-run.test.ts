import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalEventBus } from '../../src/events/bus.js';
import { ActiveRun } from '../../src/execution/active-run.js';
import { RunEventLog } from '../../src/execution/event-log.js';
import type { RunnerMessage } from '../../src/execution/protocol.js';
import { DEFAULT_RUN_LIMITS } from '../../src/run-limits.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { commandLaunch, runOfOrgA } from './helpers.js';

/** A run's events against RUN_MAX_EVENTS: the log counts them, the run fails past the limit. */
describe("a run's event limit", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.destroy();
  });

  /** A run allowed two events, with its log as active-runs.ts makes it (the log drops nothing itself). */
  function runOfTwoEvents(id: string) {
    const log = new RunEventLog(id, 0, database.handle.db, createLocalEventBus(), pino({ level: 'silent' }), null);
    const run = new ActiveRun(commandLaunch(runOfOrgA(id)), log, 60_000, { ...DEFAULT_RUN_LIMITS, events: 2 });
    return { log, run };
  }
  const event = (n: number): RunnerMessage => ({ kind: 'event', type: 'log', data: { n } });
  const exited = { kind: 'exited', code: 0, signal: null, statusLost: false } as const;
  const types = (log: RunEventLog) => log.backlog().map((e) => JSON.parse(e.json).type as string);

  it('fails the run at the event past RUN_MAX_EVENTS, which is not relayed', async () => {
    const { log, run } = runOfTwoEvents('run_over');
    for (const n of [1, 2, 3]) run.onMessage(event(n));
    expect(log.runnerEvents).toBe(2);
    expect(types(log)).toEqual(['log', 'log']);
    expect(run.outcome(exited)).toMatchObject({ status: 'failed', error: expect.stringContaining('RUN_MAX_EVENTS=2') });
    run.clearTimers();
    await log.close();
  });

  it('relays the run.interrupted of a run that wrote exactly RUN_MAX_EVENTS events, and it succeeds', async () => {
    const { log, run } = runOfTwoEvents('run_at_limit');
    for (const n of [1, 2]) run.onMessage(event(n));
    run.onMessage({
      kind: 'result',
      output: { done: true },
      values: undefined,
      checkpoint: null,
      interrupts: [{ value: 'approve?' }],
      event: { interrupts: [{ value: 'approve?' }] },
    });
    expect(types(log)).toEqual(['log', 'log', 'run.interrupted']);
    expect(run.outcome(exited)).toMatchObject({ status: 'succeeded', output: { done: true } });
    run.clearTimers();
    await log.close();
  });
});
