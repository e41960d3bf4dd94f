import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalEventBus } from '../../src/events/bus.js';
import type { LiveEvent } from '../../src/events/types.js';
import { ActiveRun } from '../../src/execution/active-run.js';
import { RunEventLog } from '../../src/execution/event-log.js';
import { RunningRuns } from '../../src/execution/running-runs.js';
import { DEFAULT_RUN_LIMITS } from '../../src/run-limits.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { commandLaunch, runOfOrgA } from './helpers.js';

/** What a new stream of a run learns from the run feed: the bus itself answers no live state. */
describe('the runs going on here, as streams of runs see them', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.destroy();
  });

  function runningRun(id: string) {
    const bus = createLocalEventBus();
    const log = new RunEventLog(id, 0, database.handle.db, bus, pino({ level: 'silent' }));
    const run = new ActiveRun(commandLaunch(runOfOrgA(id)), log, 1000, DEFAULT_RUN_LIMITS);
    const running = new RunningRuns();
    running.add(run);
    return { bus, log, running };
  }

  it("gives a new stream of a run going on here its owner and recent events, then what follows, until the run's end commits", async () => {
    const { bus, log, running } = runningRun('run_live');
    log.append('log', { message: 'one' });
    log.append('log', { message: 'two' });
    const feed = running.runFeed(bus);
    const heard: LiveEvent[] = [];
    const subscription = feed.subscribe('run_live', (event) => heard.push(event));
    expect(subscription?.live?.orgId).toBe('org_a');
    expect(subscription?.live?.backlog.map((event) => event.seq)).toEqual([1, 2]);
    log.append('log', { message: 'three' });
    expect(heard.map((event) => event.seq)).toEqual([3]);

    running.ended('run_live');
    expect(feed.subscribe('run_live', () => {})?.live).toBeNull();
    expect(bus.subscribe('run_live', () => {})?.live).toBeNull();
    // Another instance's run, or one not going on: the store tells.
    expect(feed.subscribe('run_elsewhere', () => {})?.live).toBeNull();
    subscription?.close();
    await log.close();
  });
});
