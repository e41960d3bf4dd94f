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
});
