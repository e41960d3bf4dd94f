import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalEventBus } from '../../src/events/bus.js';
import { RunEventLog } from '../../src/execution/event-log.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe("a run's event log", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.destroy();
  });

  it('keeps the events it hands to the run’s ending statement in its backlog, for streams opened before that commits', async () => {
    const log = new RunEventLog('run_backlog', 0, database.handle.db, createLocalEventBus(), pino({ level: 'silent' }));
    // Events too big for more than one to stay among the recent ones, none stored yet.
    const blob = 'z'.repeat(600 * 1024);
    for (let i = 1; i <= 3; i++) log.append('log', { message: `big ${i}`, blob });
    expect(log.backlog().map((event) => event.seq)).toEqual([1, 2, 3]);

    const { unstored, nextSeq } = await log.close();

    expect(unstored.map((row) => row.seq)).toEqual([1, 2, 3]);
    expect(nextSeq).toBe(4);
    expect(log.backlog().map((event) => event.seq)).toEqual([1, 2, 3]);
  });

  it("counts the runner's events; with a limit it drops those past it and says so once, without one it drops none", async () => {
    const silent = pino({ level: 'silent' });
    const limited = new RunEventLog('ver_limited', 0, database.handle.db, createLocalEventBus(), silent, 2);
    for (let i = 1; i <= 4; i++) limited.appendFromRunner('build.log', { message: `line ${i}` });
    limited.append('log', { message: 'the service’s own, never dropped' });
    expect(limited.runnerEvents).toBe(2);
    const kept = limited.backlog().map((event) => JSON.parse(event.json).data.message);
    expect(kept).toEqual([
      'line 1',
      'line 2',
      'Event limit of 2 events reached; further events are dropped',
      'the service’s own, never dropped',
    ]);
    await limited.close();

    const unlimited = new RunEventLog('run_unlimited', 0, database.handle.db, createLocalEventBus(), silent, null);
    for (let i = 1; i <= 4; i++) unlimited.appendFromRunner('log', { message: `line ${i}` });
    expect(unlimited.runnerEvents).toBe(4);
    expect(unlimited.backlog()).toHaveLength(4);
    await unlimited.close();
  });

  it('handed over, numbers and publishes nothing until released: numbers on after a rollback, closes after an end', async () => {
    const silent = pino({ level: 'silent' });
    const bus = createLocalEventBus();
    const published: number[] = [];
    bus.subscribe('run_handed', (event) => published.push(event.seq));
    const log = new RunEventLog('run_handed', 0, database.handle.db, bus, silent, null);
    log.append('log', { message: 'one' });
    log.append('log', { message: 'two' });

    const handed = log.handOver();
    expect(handed?.finalSeq).toBe(3);
    expect(handed?.unstored.map((row) => row.seq)).toEqual([1, 2]);
    expect(log.handOver()).toBeNull();
    log.append('log', { message: 'while handed over' });
    const closing = log.close();
    expect(published).toEqual([1, 2]);
    // The end's transaction rolled back: the log numbers what waited after what it had, and takes events again.
    handed?.release(false);
    expect(published).toEqual([1, 2, 3]);
    const { unstored, nextSeq } = await closing;
    expect(unstored.map((row) => row.seq)).toEqual([1, 2, 3]);
    expect(nextSeq).toBe(4);

    const ended = new RunEventLog('run_handed_ended', 0, database.handle.db, createLocalEventBus(), silent, null);
    ended.append('log', { message: 'one' });
    const endedHand = ended.handOver();
    ended.append('log', { message: 'dropped' });
    // The end committed: the log is closed, and what arrived meanwhile is dropped.
    endedHand?.release(true);
    expect(ended.append('log', { message: 'after' })).toBe(0);
    expect((await ended.close()).nextSeq).toBe(2);
  });
});
