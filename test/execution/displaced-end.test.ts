import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalEventBus } from '../../src/events/bus.js';
import { RunEventLog } from '../../src/execution/event-log.js';
import { createEndRecorder, type EndRecorder } from '../../src/run-record/end-recorder.js';
import * as repo from '../../src/run-record/repository.js';
import { createSignalHub } from '../../src/signals/hub.js';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';
import { insertDefaultVersion, insertRunningRun } from '../run-record/helpers.js';
import { holdEventNumber, untilLockWaits } from '../run-record/unstored-events.js';

/**
 * A run ended by someone other than its owner (a cancel, a run displacing it from its thread, a lost
 * instance) while the owner's event log is still storing: its stored events end with exactly one
 * terminal event, numbered after the others, whenever the log's batches land.
 */
describe('an end numbered after the stored events, while the run’s event log still stores', () => {
  let database: TestDatabase;
  const db = () => database.handle.db;
  const silent = pino({ level: 'silent' });
  let deploymentId: string;
  let versionId: string;
  let recorder: EndRecorder;
  const canceled = { status: 'canceled' as const, output: null, error: null };
  /** Full batches go out at once (event-log.ts MAX_BATCH). */
  const fullBatch = 500;

  /**
   * The event log's insert (`store`), each in a transaction of its own held open after its rows are in, until
   * `release`: `held` resolves once the first is, `committed` with the last one's commit.
   */
  function heldInsert() {
    let holding = () => {};
    const held = new Promise<void>((resolve) => (holding = resolve));
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let committed: Promise<number> = Promise.resolve(0);
    const store: typeof repo.insertEventsWhileRunning = (_db, rows) => {
      committed = db()
        .transaction()
        .execute(async (trx) => {
          const count = await repo.insertEventsWhileRunning(trx, rows);
          holding();
          await released;
          return count;
        });
      return committed;
    };
    return { store, held, release, committed: () => committed };
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    ({ deploymentId, versionId } = await insertDefaultVersion(db(), 'displaced'));
    const signals = createSignalHub({ logger: silent, subscribers: {} });
    recorder = createEndRecorder({ db: db(), bus: createLocalEventBus(), logger: silent, hooks: [], signals });
  });
  afterAll(async () => {
    await database?.destroy();
  });

  const events = (runId: string) =>
    db().selectFrom('run_events').select(['seq', 'type']).where('run_id', '=', runId).orderBy('seq').execute();

  it('stores none of the events the log numbered after the end: the terminal event stays last', async () => {
    const id = await insertRunningRun(db(), deploymentId, versionId);
    const bus = createLocalEventBus();
    let announce = () => {};
    const stored = new Promise<void>((resolve) => (announce = resolve));
    bus.stored = () => announce();
    const log = new RunEventLog(id, 0, db(), bus, silent, null, repo.insertEventsWhileRunning);
    log.append('run.started', { entrypoint: 'true' });
    await stored;

    const ended = await recorder.end({ runId: id, from: ['running'], outcome: canceled, seq: 'next' });
    expect(ended?.event?.seq).toBe(2);
    // The runner writes on until its owner hears of the end: the log numbers on from 2, unaware.
    for (let i = 0; i < fullBatch; i++) log.append('log', { message: `late ${i}` });
    // The full batch set the log's flush timer to 0 ms; a timer of the same duration set after it fires after it,
    // by when that flush is under way, and `close` waits for it.
    await new Promise((resolve) => setTimeout(resolve, 0));
    await log.close();

    expect(await events(id)).toEqual([
      { seq: 1, type: 'run.started' },
      { seq: 2, type: 'run.canceled' },
    ]);
  });

  it.runIf(usingPostgres())(
    'numbers the end after a batch whose insert is under way when the end begins (PostgreSQL)',
    async () => {
      const id = await insertRunningRun(db(), deploymentId, versionId);
      // The log's insert, held open (uncommitted) until the end has begun and waits.
      const insert = heldInsert();
      const log = new RunEventLog(id, 0, db(), createLocalEventBus(), silent, null, insert.store);
      log.append('run.started', { entrypoint: 'true' });
      await insert.held;

      const ending = recorder.end({ runId: id, from: ['running'], outcome: canceled, seq: 'next' });
      // The end waits for the insert's transaction (a lock it cannot have yet).
      await untilLockWaits(db(), 1);
      insert.release();
      const ended = await ending;
      await log.close();

      expect(ended?.event?.seq).toBe(2);
      expect(await events(id)).toEqual([
        { seq: 1, type: 'run.started' },
        { seq: 2, type: 'run.canceled' },
      ]);
    },
  );

  it.runIf(usingPostgres())(
    'ends the run and stores its final event at once: never ended without it, whatever holds the final number (PostgreSQL)',
    async () => {
      const id = await insertRunningRun(db(), deploymentId, versionId);
      // The log's insert of event 1, held open (uncommitted) until the end has begun and waits.
      const insert = heldInsert();
      const log = new RunEventLog(id, 0, db(), createLocalEventBus(), silent, null, insert.store);
      log.append('run.started', { entrypoint: 'true' });
      await insert.held;
      // Number 2, the one the end takes once event 1 is in, held by another transaction, uncommitted.
      const number = await holdEventNumber(db(), id, 2);

      const ending = recorder.end({ runId: id, from: ['running'], outcome: canceled, seq: 'next' });
      await untilLockWaits(db(), 1);
      insert.release();
      await insert.committed();
      // Event 1 is in, and the end goes on until it waits for the transaction holding number 2.
      await untilLockWaits(db(), 1, number.pid);
      const { status } = await db().selectFrom('runs').select('status').where('id', '=', id).executeTakeFirstOrThrow();
      const finals = (await events(id)).filter((event) => event.type === 'run.canceled');
      await number.release();
      // Not ended yet (it waits), or ended with its final event; never ended without it.
      expect({ status, finals: finals.length }).toEqual({ status: 'running', finals: 0 });
      expect((await ending)?.event?.seq).toBe(2);
      await log.close();
      expect(await events(id)).toEqual([
        { seq: 1, type: 'run.started' },
        { seq: 2, type: 'run.canceled' },
      ]);
    },
  );
});
