import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { otherOrganization } from '../mcp/helpers.js';
import {
  createDeployment,
  createWebhookTestContext,
  enqueueRunEnd,
  finishedRun,
  getDelivery,
  type Receiver,
  startReceiver,
  until,
  type WebhookTestContext,
} from './helpers.js';

const SLOTS = 4;
const TIMEOUT_SECONDS = 10;

/**
 * Retries take the instance's delivery slots (first attempts go out at once). An organization whose receivers
 * hang until WEBHOOK_TIMEOUT_SECONDS held every slot with its retries, and another organization's retry waited
 * behind them all; as with run slots (CONTRACTS §12), an organization holds a share of the slots once the
 * installation has several, three of the four here.
 */
describe('delivery slots shared between organizations', () => {
  let ctx: WebhookTestContext;
  let hanging: Receiver;
  let answering: Receiver;
  beforeAll(async () => {
    ctx = await createWebhookTestContext(
      { WEBHOOK_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS) },
      { webhookWorker: { concurrency: SLOTS } },
    );
    hanging = await startReceiver();
    answering = await startReceiver();
  });
  afterAll(async () => {
    await hanging?.close();
    await answering?.close();
    await ctx?.close();
  });

  it("retries another organization's delivery while one organization's receiver hangs", async () => {
    const slowKey = await otherOrganization(ctx, 'slow receivers');
    const slowDeployment = (await ctx.call('POST', '/v1/deployments', { key: slowKey, body: { name: 'slow' } })).json()
      .id as string;
    const slowHook = await ctx.call('POST', '/v1/webhooks', {
      key: slowKey,
      body: { name: 'hangs', events: ['run.succeeded'], deployment_id: slowDeployment, url: hanging.url },
    });
    expect(slowHook.statusCode, slowHook.body).toBe(201);
    // Each first attempt fails at once; every retry hangs until the timeout.
    const firstSeen = new Set<string>();
    hanging.respond = (delivery) => {
      const id = String(delivery.headers['x-service-delivery']);
      if (firstSeen.has(id)) return null;
      firstSeen.add(id);
      return 500;
    };
    const slowRun = finishedRun(slowDeployment);
    for (let i = 0; i < SLOTS + 2; i++) {
      await enqueueRunEnd(ctx, { ...slowRun, id: `${slowRun.id}${i}` });
    }
    // Its retries hold what they may of the slots.
    await until(() => hanging.received.length >= SLOTS + 2 + SLOTS - 1);

    const deploymentId = await createDeployment(ctx);
    const hook = (
      await ctx.call('POST', '/v1/webhooks', {
        body: { name: 'answers', events: ['run.succeeded'], deployment_id: deploymentId, url: answering.url },
      })
    ).json() as { id: string };
    let answered = 0;
    answering.respond = () => (answered++ === 0 ? 500 : 200);
    const [deliveryId] = await enqueueRunEnd(ctx, finishedRun(deploymentId));
    const startedAt = Date.now();
    const delivered = await until(
      async () => {
        const row = await getDelivery(ctx, hook.id, deliveryId as string);
        return row.status === 'succeeded' ? row : undefined;
      },
      (TIMEOUT_SECONDS + 5) * 1000,
    );
    // Its retry went while the other organization's retries still hung, not after their timeout.
    expect(Date.now() - startedAt).toBeLessThan((TIMEOUT_SECONDS / 2) * 1000);
    expect(delivered.attempts).toBe(2);
    // Three hanging retries at most: the share of four slots.
    expect(hanging.received.length).toBe(SLOTS + 2 + SLOTS - 1);
  });
});
