import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDeployment,
  createWebhook,
  createWebhookTestContext,
  enqueueRunEnd,
  finishedRun,
  freePort,
  getDelivery,
  type Receiver,
  startReceiver,
  until,
  type WebhookTestContext,
} from './helpers.js';

describe('deliveries survive a restart', () => {
  let first: WebhookTestContext;
  let second: WebhookTestContext | undefined;
  let receiver: Receiver | undefined;

  beforeAll(async () => {
    first = await createWebhookTestContext({ WEBHOOK_RETRY_SCHEDULE: '0.05,0.1,0.2,0.4,0.8,1.6,3.2' });
  });
  afterAll(async () => {
    await receiver?.close();
    await first.closeApp();
    if (second) await second.close();
    else await first.close();
  });

  it('resumes pending retries in a new app on the same database', async () => {
    const deploymentId = await createDeployment(first);
    const port = await freePort();
    const hook = await createWebhook(first, { deployment_id: deploymentId, url: `http://127.0.0.1:${port}/hook` });
    const [deliveryId] = await enqueueRunEnd(first, finishedRun(deploymentId));
    const failing = await until(async () => {
      const row = await getDelivery(first, hook.id, deliveryId as string);
      return row.attempts >= 2 ? row : undefined;
    });
    expect(failing.status).toBe('pending');

    // The instance goes away mid-retries; a new one starts on the same database.
    await first.closeApp();
    const attemptsAtStop = (
      await first.database.handle.db
        .selectFrom('webhook_deliveries')
        .select('attempts')
        .where('id', '=', deliveryId as string)
        .executeTakeFirstOrThrow()
    ).attempts;
    receiver = await startReceiver(port, hook.secret);
    second = await createWebhookTestContext(
      { WEBHOOK_RETRY_SCHEDULE: '0.05,0.1,0.2,0.4,0.8,1.6,3.2' },
      { database: first.database },
    );

    const done = await until(async () => {
      const row = await getDelivery(second as WebhookTestContext, hook.id, deliveryId as string);
      return row.status === 'succeeded' ? row : undefined;
    });
    expect(done.attempts).toBeGreaterThan(attemptsAtStop);
    expect(done.attempt_history).toHaveLength(done.attempts);
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]?.verified).toBe(true);
    expect(receiver.received[0]?.headers['x-service-delivery']).toBe(deliveryId);
  });

  it('takes over a delivery whose sender died mid-attempt once its lease expires', async () => {
    const ctx = second as WebhookTestContext;
    receiver ??= await startReceiver();
    const deploymentId = await createDeployment(ctx, 'lease');
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    receiver.secret = hook.secret;
    // A row leased by an instance that crashed: leased, lease already run out.
    const db = ctx.database.handle.db;
    await db.transaction().execute(async (trx) => {
      const [id] = await enqueueRunEnd(ctx, finishedRun(deploymentId), trx);
      await trx
        .updateTable('webhook_deliveries')
        .set({ lease_token: 'dead-instance', lease_until: new Date(Date.now() - 1000) })
        .where('id', '=', id as string)
        .execute();
    });
    const [row] = (await ctx.call('GET', `/v1/webhooks/${hook.id}/deliveries`)).json().deliveries;
    const done = await until(async () => {
      const found = await getDelivery(ctx, hook.id, row.id);
      return found.status === 'succeeded' ? found : undefined;
    });
    expect(done.attempts).toBe(1);
  });
});
