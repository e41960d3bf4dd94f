import type { Kysely } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ORG_ID } from '../../src/access/bootstrap.js';
import { createInstanceCaches } from '../../src/cache/instance-caches.js';
import type { Database } from '../../src/db/types.js';
import { createLocalEventBus } from '../../src/events/bus.js';
import { createEndRecorder, type EndRecorder, type RunOutcome } from '../../src/run-record/end-recorder.js';
import type { RunEndHook } from '../../src/run-record/types.js';
import { createSignalHub } from '../../src/signals/hub.js';
import { webhookRunEndHook } from '../../src/webhooks/run-end-hook.js';
import { createWebhookService, type WrittenDelivery } from '../../src/webhooks/service.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { insertDefaultVersion, insertRunningRun } from '../run-record/helpers.js';

/**
 * A run's deliveries are written by the statement that ends the run: with no transaction around it
 * when no other hook needs one (BEGIN and COMMIT would each cost a round trip before the delivery
 * can be sent), inside the transaction of a hook that does. Their bodies are SPEC §6's, byte for byte.
 */
describe('deliveries written by the statement that ends a run', () => {
  let database: TestDatabase;
  let deploymentId: string;
  let versionId: string;
  const sent: WrittenDelivery[] = [];
  let transactions = 0;
  let recorder: EndRecorder;
  /** The recorder's hooks: the webhook hook, after another one in one test. */
  const hooks: RunEndHook[] = [];
  const lease = { token: 'lease-of-this-test', seconds: 60 };

  beforeAll(async () => {
    database = await createTestDatabase();
    const db = database.handle.db;
    ({ deploymentId, versionId } = await insertDefaultVersion(db, 'ends'));
    const webhooks = createWebhookService(db, {
      allowPrivateUrls: true,
      caches: createInstanceCaches({ ...database.handle, listener: null }),
    });
    for (const name of ['first', 'second']) {
      await webhooks.create(DEFAULT_ORG_ID, {
        deployment_id: deploymentId,
        name,
        url: `http://127.0.0.1:9/${name}`,
        events: ['run.succeeded', 'run.failed'],
        environment: 'production',
        enabled: true,
      });
    }
    // Every transaction the recorder opens is counted.
    const counting = new Proxy(db, {
      get(target, key) {
        if (key === 'transaction') transactions++;
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as Kysely<Database>;
    const outbox = { leaseForNew: () => lease, sendCommitted: (d: WrittenDelivery[]) => sent.push(...d), wake() {} };
    hooks.push(webhookRunEndHook(webhooks, outbox));
    recorder = createEndRecorder({
      db: counting,
      bus: createLocalEventBus(),
      logger: pino({ level: 'silent' }),
      hooks,
      signals: createSignalHub({ logger: pino({ level: 'silent' }), subscribers: {} }),
    });
  });
  afterAll(async () => {
    await database?.destroy();
  });

  async function endRun(outcome: RunOutcome) {
    const id = await insertRunningRun(database.handle.db, deploymentId, versionId);
    sent.length = 0;
    transactions = 0;
    // The owner's end, numbered (one 'next' locks the run's row first, in a transaction); the run has no events.
    const request = { runId: id, from: ['running'] as const, outcome, seq: 1 };
    const ended = await recorder.end({ ...request, identity: { deploymentId, threadId: null } });
    return { id, ended, request };
  }

  const storedDeliveries = (runId: string) =>
    database.handle.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'webhook_id', 'payload', 'lease_token', 'status'])
      .where('run_id', '=', runId)
      .orderBy('id')
      .execute();

  it('writes a delivery per webhook in the ending statement, leased, and hands them over after it', async () => {
    const output = { answer: 42, text: 'quotes " and \\ and \u2028 and é', nested: [1, { ok: null }] };
    const { id, ended } = await endRun({ status: 'succeeded', output, error: null });
    expect(ended?.run.status).toBe('succeeded');
    expect(transactions).toBe(0);

    const stored = await storedDeliveries(id);
    expect(stored).toHaveLength(2);
    expect(stored.every((row) => row.lease_token === lease.token && row.status === 'pending')).toBe(true);
    expect(sent.map((d) => d.id).sort()).toEqual(stored.map((row) => row.id));
    expect(sent.every((d) => d.event === 'run.succeeded' && d.url.startsWith('http://127.0.0.1:9/'))).toBe(true);

    // The body is SPEC §6's object as JSON.stringify writes it: the stored run's times, the output as given.
    const run = ended?.run as NonNullable<typeof ended>['run'];
    for (const delivery of sent) {
      const timestamp = JSON.parse(delivery.payload).timestamp;
      expect(timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const data = {
        run_id: id,
        deployment_id: deploymentId,
        status: 'succeeded',
        output,
        started_at: run.started_at?.toISOString(),
        completed_at: run.completed_at?.toISOString(),
      };
      expect(delivery.payload).toBe(JSON.stringify({ event: 'run.succeeded', timestamp, data }));
      expect(stored.find((row) => row.id === delivery.id)?.payload).toBe(delivery.payload);
    }
  });

  it('sends a failed run’s error, nothing for a canceled run, and writes nothing for an end written already', async () => {
    const failed = await endRun({ status: 'failed', output: null, error: 'it broke: "badly"' });
    expect(transactions).toBe(0);
    expect(sent).toHaveLength(2);
    const body = JSON.parse(sent[0]?.payload ?? '');
    const run = failed.ended?.run as NonNullable<typeof failed.ended>['run'];
    const data = {
      run_id: failed.id,
      deployment_id: deploymentId,
      status: 'failed',
      output: {},
      error_message: 'it broke: "badly"',
      started_at: run.started_at?.toISOString(),
      completed_at: run.completed_at?.toISOString(),
    };
    expect(sent[0]?.payload).toBe(JSON.stringify({ event: 'run.failed', timestamp: body.timestamp, data }));

    const canceled = await endRun({ status: 'canceled', output: null, error: null });
    expect(canceled.ended?.run.status).toBe('canceled');
    expect(transactions).toBe(0);
    expect(sent).toHaveLength(0);
    expect(await storedDeliveries(canceled.id)).toHaveLength(0);

    sent.length = 0;
    const again = await recorder.end({ ...failed.request, identity: { deploymentId, threadId: null } });
    expect(again).toBeNull();
    expect(sent).toHaveLength(0);
    expect(await storedDeliveries(failed.id)).toHaveLength(2);
  });

  it('writes them in the ending statement inside the transaction of a hook that needs one, or not at all', async () => {
    // A hook without joinEnd, before the webhook hook: it runs after the ending statement, in its transaction.
    let seen: number | undefined;
    const thread: RunEndHook = {
      async inTransaction(trx, run) {
        const rows = await trx.selectFrom('webhook_deliveries').select('id').where('run_id', '=', run.id).execute();
        seen = rows.length;
        return undefined;
      },
    };
    hooks.unshift(thread);
    try {
      const { id, ended } = await endRun({ status: 'succeeded', output: { ok: true }, error: null });
      expect(ended?.run.status).toBe('succeeded');
      expect(transactions).toBe(1);
      // Written already, by the statement that ended the run, before any hook's own writes.
      expect(seen).toBe(2);
      const stored = await storedDeliveries(id);
      expect(stored).toHaveLength(2);
      expect(sent.map((d) => d.id).sort()).toEqual(stored.map((row) => row.id));

      // When that hook fails, its transaction rolls back with the end and the deliveries: none written, none sent.
      thread.inTransaction = async () => {
        throw new Error('the thread could not be released');
      };
      const failing = await insertRunningRun(database.handle.db, deploymentId, versionId);
      sent.length = 0;
      const request = { runId: failing, from: ['running'] as const, seq: 1 };
      const outcome: RunOutcome = { status: 'succeeded', output: {}, error: null };
      await expect(recorder.end({ ...request, outcome, identity: { deploymentId, threadId: null } })).rejects.toThrow(
        'the thread could not be released',
      );
      expect(await storedDeliveries(failing)).toHaveLength(0);
      expect(sent).toHaveLength(0);
      const row = await database.handle.db
        .selectFrom('runs')
        .select('status')
        .where('id', '=', failing)
        .executeTakeFirstOrThrow();
      expect(row.status).toBe('running');
    } finally {
      hooks.shift();
    }
  });
});
