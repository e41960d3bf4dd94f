import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapDefaultOrganization, DEFAULT_ORG_ID } from '../../src/access/bootstrap.js';
import { createSignalHub } from '../../src/signals/hub.js';
import { threadRunStopped } from '../../src/threads/run-hooks.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/** What a thread hears when the process of a run it waited for is gone. */
describe("a thread run's stopped process", () => {
  let database: TestDatabase;
  const db = () => database.handle.db;

  beforeAll(async () => {
    database = await createTestDatabase();
    await bootstrapDefaultOrganization(db(), undefined);
  });
  afterAll(async () => {
    await database?.destroy();
  });

  it('frees the thread that waited for it and says which, once; a run no thread waits for says nothing', async () => {
    await db()
      .insertInto('threads')
      .values({
        id: 'thr_waiting',
        org_id: DEFAULT_ORG_ID,
        deployment_id: null,
        status: 'busy',
        metadata: '{}',
        active_run_id: 'run_next',
        stopping_run_id: 'run_canceled',
        stopping_instance_id: 'ins_a',
      })
      .execute();
    const released: string[] = [];
    const signals = createSignalHub({
      logger: pino({ level: 'silent' }),
      subscribers: { threadReleased: [({ threadId }) => released.push(threadId)] },
    });
    const stopped = threadRunStopped(db(), signals);

    await stopped('run_canceled');
    await stopped('run_canceled');
    await stopped('run_of_no_waiting_thread');

    expect(released).toEqual(['thr_waiting']);
    const thread = await db()
      .selectFrom('threads')
      .select(['stopping_run_id', 'stopping_instance_id', 'active_run_id'])
      .where('id', '=', 'thr_waiting')
      .executeTakeFirstOrThrow();
    expect(thread).toEqual({ stopping_run_id: null, stopping_instance_id: null, active_run_id: 'run_next' });
  });
});
