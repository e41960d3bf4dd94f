import type { Kysely } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapDefaultOrganization, DEFAULT_ORG_ID } from '../../src/access/bootstrap.js';
import { createInstanceCaches } from '../../src/cache/instance-caches.js';
import type { Database } from '../../src/db/types.js';
import { insertDeployment, insertVersion } from '../../src/deployments/repository.js';
import { createLocalEventBus } from '../../src/events/bus.js';
import { newId } from '../../src/ids.js';
import { createEndRecorder, type EndRecorder, type RunOutcome } from '../../src/run-record/end-recorder.js';
import type { FinishedRun } from '../../src/run-record/types.js';
import { createSignalHub } from '../../src/signals/hub.js';
import { buildPayload } from '../../src/webhooks/payload.js';
import { webhookRunEndHook } from '../../src/webhooks/run-end-hook.js';
import { createWebhookService, type WrittenDelivery } from '../../src/webhooks/service.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { insertRunningRun } from '../run-record/helpers.js';

/**
 * A run's end with webhooks is one statement: the deliveries are written by the statement that
 * ends the run, with no transaction around it (BEGIN and COMMIT would each cost a round trip
 * before the delivery can be sent), and their bodies are the bytes the transaction path writes.
 */
describe('deliveries written by the statement that ends a run', () => {
  let database: TestDatabase;
  const deploymentId = newId('dep');
  const versionId = newId('ver');
  const sent: WrittenDelivery[] = [];
  let transactions = 0;
  let recorder: EndRecorder;
  const lease = { token: 'lease-of-this-test', seconds: 60 };

  beforeAll(async () => {
    database = await createTestDatabase();
    const db = database.handle.db;
    await bootstrapDefaultOrganization(db, undefined);
    await insertDeployment(db, { id: deploymentId, org_id: DEFAULT_ORG_ID, name: 'ends' });
    await insertVersion(db, {
      id: versionId,
      deployment_id: deploymentId,
      number: 1,
      command: ['true'],
      cwd: null,
      env: {},
      timeout_seconds: null,
    });
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
    recorder = createEndRecorder({
      db: counting,
      bus: createLocalEventBus(),
      logger: pino({ level: 'silent' }),
      hooks: [webhookRunEndHook(webhooks, outbox)],
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
    const request = { runId: id, from: ['running'] as const, outcome, seq: 'next' as const };
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

    // The body is the bytes the transaction path builds: the stored run's times, the runner's output as given.
    const run = ended?.run as NonNullable<typeof ended>['run'];
    const finished: FinishedRun = {
      ...run,
      status: 'succeeded',
      output,
      values: undefined,
      completed_at: run.completed_at as Date,
    };
    for (const delivery of sent) {
      const timestamp = new Date(JSON.parse(delivery.payload).timestamp);
      expect(delivery.payload).toBe(buildPayload('run.succeeded', finished, timestamp));
      expect(stored.find((row) => row.id === delivery.id)?.payload).toBe(delivery.payload);
    }
    expect(JSON.parse(sent[0]?.payload ?? '').data).toEqual({
      run_id: id,
      deployment_id: deploymentId,
      status: 'succeeded',
      output,
      started_at: run.started_at?.toISOString(),
      completed_at: run.completed_at?.toISOString(),
    });
  });

  it('sends a failed run’s error, nothing for a canceled run, and writes nothing for an end written already', async () => {
    const failed = await endRun({ status: 'failed', output: null, error: 'it broke: "badly"' });
    expect(transactions).toBe(0);
    expect(sent).toHaveLength(2);
    const body = JSON.parse(sent[0]?.payload ?? '');
    expect(body.event).toBe('run.failed');
    expect(body.data).toMatchObject({ status: 'failed', output: {}, error_message: 'it broke: "badly"' });

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
});
