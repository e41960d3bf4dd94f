import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalEventBus } from '../../src/events/bus.js';
import type { LiveEvent } from '../../src/events/types.js';
import { createEndRecorder, type EndRecorder } from '../../src/run-record/end-recorder.js';
import * as repo from '../../src/run-record/repository.js';
import type { RunEndHook } from '../../src/run-record/types.js';
import { createSignalHub } from '../../src/signals/hub.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDefaultVersion, insertRunningRun } from './helpers.js';

/** The one place runs end, on a real database: status, final event, hooks and what follows the commit, or none of it. */
describe('the end recorder', () => {
  let database: TestDatabase;
  const db = () => database.handle.db;
  let versionId: string;
  let deploymentId: string;
  /** What happened, in order: signals, hooks' follow-ups, the end published to streams. */
  const story: string[] = [];
  const bus = createLocalEventBus();
  const hooks: RunEndHook[] = [];
  let recorder: EndRecorder;

  beforeAll(async () => {
    database = await createTestDatabase();
    ({ deploymentId, versionId } = await insertDefaultVersion(db(), 'ends'));
    const signals = createSignalHub({
      logger: pino({ level: 'silent' }),
      subscribers: { ended: [({ runId }) => story.push(`ended ${runId}`)] },
    });
    recorder = createEndRecorder({ db: db(), bus, logger: pino({ level: 'silent' }), hooks, signals });
  });
  afterAll(async () => {
    await database?.destroy();
  });

  /** A running run, and what its streams hear. */
  async function runningRun(): Promise<{ id: string; heard: LiveEvent[] }> {
    const id = await insertRunningRun(db(), deploymentId, versionId);
    const heard: LiveEvent[] = [];
    bus.subscribe(id, (event) => {
      heard.push(event);
      story.push(`published ${id}`);
    });
    return { id, heard };
  }

  const events = (runId: string) =>
    db().selectFrom('run_events').select(['seq', 'type']).where('run_id', '=', runId).orderBy('seq').execute();

  it('ends a run once, with its final event, then signals, follows up and publishes, in that order', async () => {
    const { id, heard } = await runningRun();
    hooks.push({ inTransaction: async (_trx, run) => () => story.push(`followed up ${run.id} ${run.status}`) });
    story.length = 0;
    const outcome = { status: 'succeeded' as const, output: { answer: 42 }, error: null };
    const unstored = [{ run_id: id, seq: 1, type: 'log', data: '{"message":"late"}' }];

    const ended = await recorder.end({ runId: id, from: ['running'], outcome, seq: 2, unstored });

    expect(ended?.event?.seq).toBe(2);
    expect(story).toEqual([`ended ${id}`, `followed up ${id} succeeded`, `published ${id}`]);
    expect(heard).toHaveLength(1);
    expect(heard[0]?.end).toEqual({ status: 'succeeded', output: { answer: 42 }, error: null });
    const run = await repo.findRunById(db(), id);
    expect([run?.status, run?.output, run?.completed_at instanceof Date]).toEqual(['succeeded', { answer: 42 }, true]);
    expect(await events(id)).toEqual([
      { seq: 1, type: 'log' },
      { seq: 2, type: 'run.completed' },
    ]);

    // Ended already: a second end (a cancel that came late) changes nothing and tells no one.
    story.length = 0;
    const late = { status: 'canceled' as const, output: null, error: null };
    expect(await recorder.end({ runId: id, from: ['running'], outcome: late, seq: 'next' })).toBeNull();
    expect(story).toEqual([]);
    expect((await repo.findRunById(db(), id))?.status).toBe('succeeded');
    hooks.length = 0;
  });

  it('leaves the run as it was when a hook fails in the ending transaction, and tells no one', async () => {
    const { id, heard } = await runningRun();
    let tries = 0;
    hooks.push({
      inTransaction: async () => {
        tries++;
        throw new Error('the outbox is broken');
      },
    });
    story.length = 0;
    const outcome = { status: 'failed' as const, output: null, error: 'it broke' };
    await expect(recorder.end({ runId: id, from: ['running'], outcome, seq: 'next' })).rejects.toThrow(
      'the outbox is broken',
    );
    expect(tries).toBe(3);
    expect((await repo.findRunById(db(), id))?.status).toBe('running');
    expect(await events(id)).toEqual([]);
    expect([story, heard]).toEqual([[], []]);
    hooks.length = 0;
  });

  it('skips a hook that says it does not apply to the run, and fails a run whose end the database refuses as data', async () => {
    const { id } = await runningRun();
    hooks.push({
      applies: (run) => run.threadId !== null,
      inTransaction: async () => () => story.push('a thread hook ran'),
    });
    story.length = 0;
    // PostgreSQL keeps no U+0000 in jsonb: this output can never be stored.
    const outcome = { status: 'succeeded' as const, output: { text: 'nul \u0000 here' }, error: null };
    const identity = { deploymentId, threadId: null };
    const unstored = [{ run_id: id, seq: 1, type: 'run.started', data: '{}' }];

    expect(await recorder.recordOwnEnd({ runId: id, from: ['running'], outcome, seq: 2, unstored, identity })).toBe(
      'recorded',
    );

    const run = await repo.findRunById(db(), id);
    expect(run?.status).toBe('failed');
    expect(run?.error_message).toMatch(/^Run output could not be stored: /);
    expect(await events(id)).toEqual([
      { seq: 1, type: 'run.started' },
      { seq: 2, type: 'run.failed' },
    ]);
    expect(story).toEqual([`ended ${id}`, `published ${id}`]);
    hooks.length = 0;
  });
});
