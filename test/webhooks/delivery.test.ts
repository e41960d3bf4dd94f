import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createDeployment,
  createWebhook,
  createWebhookTestContext,
  deleteAllWebhooks,
  enqueueRunEnd,
  finishedRun,
  freePort,
  getDelivery,
  type Receiver,
  startReceiver,
  until,
  verifySignature,
  type WebhookTestContext,
} from './helpers.js';

describe('outgoing webhook delivery', () => {
  let ctx: WebhookTestContext;
  let receiver: Receiver;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createWebhookTestContext({ WEBHOOK_RETRY_SCHEDULE: '0.05,0.1,0.2,0.4,0.8,1.6,3.2' });
    receiver = await startReceiver();
    deploymentId = await createDeployment(ctx);
  });
  afterAll(async () => {
    await receiver.close();
    await ctx.close();
  });
  afterEach(async () => {
    receiver.respond = (delivery) => (delivery.verified ? 200 : 401);
    await deleteAllWebhooks(ctx);
  });

  const fromDelivery = (id: string) => receiver.received.filter((r) => r.headers['x-service-delivery'] === id);

  it('posts a signed run.succeeded with the SPEC body and headers, once', async () => {
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    receiver.secret = hook.secret;
    const run = finishedRun(deploymentId, { output: { answer: 42, nested: { ok: true } } });
    const [deliveryId] = await enqueueRunEnd(ctx, run);
    expect(deliveryId).toMatch(/^dlv_/);

    const delivery = await until(async () => {
      const row = await getDelivery(ctx, hook.id, deliveryId as string);
      return row.status === 'succeeded' ? row : undefined;
    });
    const received = fromDelivery(deliveryId as string);
    expect(received).toHaveLength(1);
    const [first] = received;
    expect(first?.verified).toBe(true);
    expect(first?.headers['x-service-event']).toBe('run.succeeded');
    expect(first?.headers['content-type']).toBe('application/json');
    expect(first?.headers['x-service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(Number(first?.headers['x-service-timestamp'])).toBeGreaterThan(1_600_000_000);
    const body = JSON.parse(first?.body ?? '');
    expect(body).toEqual({
      event: 'run.succeeded',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: {
        run_id: run.id,
        deployment_id: deploymentId,
        status: 'succeeded',
        output: { answer: 42, nested: { ok: true } },
        started_at: run.started_at?.toISOString(),
        completed_at: run.completed_at.toISOString(),
      },
    });
    expect(delivery).toMatchObject({
      id: deliveryId,
      event: 'run.succeeded',
      run_id: run.id,
      status: 'succeeded',
      attempts: 1,
      response_status: 200,
      error_message: null,
      next_attempt_at: null,
    });
    expect(delivery.last_attempt_at).toEqual(expect.any(String));
    expect(delivery.attempt_history).toEqual([
      expect.objectContaining({ number: 1, response_status: 200, error_message: null }),
    ]);
    expect(delivery.payload).toEqual(body);

    const list = await ctx.call('GET', `/v1/webhooks/${hook.id}/deliveries`);
    expect(list.statusCode).toBe(200);
    expect(list.json().deliveries[0]).toEqual({
      id: deliveryId,
      event: 'run.succeeded',
      run_id: run.id,
      status: 'succeeded',
      attempts: 1,
      response_status: 200,
      error_message: null,
      created_at: expect.any(String),
      last_attempt_at: expect.any(String),
      next_attempt_at: null,
    });
  });

  it('reaches every enabled webhook of the deployment and environment that wants the event, and no other', async () => {
    const other = await createDeployment(ctx, 'other');
    const wanted = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url, events: ['run.failed'] });
    const second = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    const onlySucceeded = await createWebhook(ctx, {
      deployment_id: deploymentId,
      url: receiver.url,
      events: ['run.succeeded'],
    });
    const staging = await createWebhook(ctx, {
      deployment_id: deploymentId,
      url: receiver.url,
      environment: 'staging',
    });
    const disabled = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url, enabled: false });
    const otherDeployment = await createWebhook(ctx, { deployment_id: other, url: receiver.url });
    // Two secrets are in play here; the signatures are checked below.
    receiver.respond = () => 200;

    const run = finishedRun(deploymentId, { status: 'failed', output: null, error_message: 'boom' });
    const ids = await enqueueRunEnd(ctx, run);
    expect(ids).toHaveLength(2);
    await until(async () => {
      for (const hook of [wanted, second]) {
        const list = (await ctx.call('GET', `/v1/webhooks/${hook.id}/deliveries`)).json().deliveries;
        if (list.length !== 1 || list[0].status === 'pending') return false;
      }
      return true;
    });
    for (const hook of [onlySucceeded, staging, disabled, otherDeployment]) {
      expect((await ctx.call('GET', `/v1/webhooks/${hook.id}/deliveries`)).json().deliveries).toEqual([]);
    }
    const bodies = receiver.received.filter((r) => ids.includes(r.headers['x-service-delivery'] as string));
    expect(bodies).toHaveLength(2);
    const payload = JSON.parse(bodies[0]?.body ?? '');
    expect(payload.event).toBe('run.failed');
    expect(payload.data).toEqual({
      run_id: run.id,
      deployment_id: deploymentId,
      status: 'failed',
      output: {},
      error_message: 'boom',
      started_at: run.started_at?.toISOString(),
      completed_at: run.completed_at.toISOString(),
    });
    // Each webhook signs with its own secret.
    const [a, b] = bodies;
    expect([a, b].filter((r) => r && verifySignature(wanted.secret, r.headers, r.body))).toHaveLength(1);
    expect([a, b].filter((r) => r && verifySignature(second.secret, r.headers, r.body))).toHaveLength(1);

    expect(await enqueueRunEnd(ctx, finishedRun(deploymentId, { status: 'canceled', output: null }))).toEqual([]);
  });

  it('retries while the receiver is down, with the same delivery id, until it is up', async () => {
    const port = await freePort();
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: `http://127.0.0.1:${port}/hook` });
    const [deliveryId] = await enqueueRunEnd(ctx, finishedRun(deploymentId));
    const failing = await until(async () => {
      const row = await getDelivery(ctx, hook.id, deliveryId as string);
      return row.attempts >= 2 ? row : undefined;
    });
    expect(failing.status).toBe('pending');
    expect(failing.response_status).toBeNull();
    expect(failing.error_message).toBe('Connection refused');
    expect(failing.next_attempt_at).toEqual(expect.any(String));

    const late = await startReceiver(port, hook.secret);
    late.respond = (delivery) => (delivery.verified ? 500 : 401);
    try {
      const errored = await until(async () => {
        const row = await getDelivery(ctx, hook.id, deliveryId as string);
        return row.response_status === 500 ? row : undefined;
      });
      expect(errored.status).toBe('pending');
      expect(errored.error_message).toBe('Receiver answered 500');
      late.respond = (delivery) => (delivery.verified ? 204 : 401);
      const done = await until(async () => {
        const row = await getDelivery(ctx, hook.id, deliveryId as string);
        return row.status === 'succeeded' ? row : undefined;
      });
      expect(done.response_status).toBe(204);
      expect(done.error_message).toBeNull();
      expect(done.attempts).toBe(done.attempt_history.length);
      expect(done.attempt_history[0]).toMatchObject({
        number: 1,
        response_status: null,
        error_message: 'Connection refused',
      });
      const ids = new Set(late.received.map((r) => r.headers['x-service-delivery']));
      expect([...ids]).toEqual([deliveryId]);
      expect(late.received.every((r) => r.verified)).toBe(true);
      expect(new Set(late.received.map((r) => r.body)).size).toBe(1);
    } finally {
      await late.close();
    }
  });

  it('disables the webhook on a 410 answer and fails the delivery without retrying', async () => {
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    receiver.secret = hook.secret;
    receiver.respond = () => 410;
    const [deliveryId] = await enqueueRunEnd(ctx, finishedRun(deploymentId));
    const row = await until(async () => {
      const found = await getDelivery(ctx, hook.id, deliveryId as string);
      return found.status === 'failed' ? found : undefined;
    });
    expect(row).toMatchObject({ attempts: 1, response_status: 410, next_attempt_at: null });
    expect(row.error_message).toMatch(/410/);
    expect((await ctx.call('GET', `/v1/webhooks/${hook.id}`)).json().enabled).toBe(false);
    expect(await enqueueRunEnd(ctx, finishedRun(deploymentId))).toEqual([]);

    const redeliver = await ctx.call('POST', `/v1/webhooks/${hook.id}/deliveries/${deliveryId}/redeliver`);
    expect(redeliver.statusCode).toBe(400);
    expect(redeliver.json().error.code).toBe('bad_request');
  });

  it('redelivers the same delivery (same id and body) on request', async () => {
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    receiver.secret = hook.secret;
    const [deliveryId] = await enqueueRunEnd(ctx, finishedRun(deploymentId));
    await until(async () => (await getDelivery(ctx, hook.id, deliveryId as string)).status === 'succeeded');

    const response = await ctx.call('POST', `/v1/webhooks/${hook.id}/deliveries/${deliveryId}/redeliver`);
    expect(response.statusCode).toBe(202);
    expect(response.json()).toEqual({ id: deliveryId, status: 'pending' });
    const row = await until(async () => {
      const found = await getDelivery(ctx, hook.id, deliveryId as string);
      return found.status === 'succeeded' && found.attempts === 2 ? found : undefined;
    });
    expect(row.attempt_history).toHaveLength(2);
    const received = fromDelivery(deliveryId as string);
    expect(received).toHaveLength(2);
    expect(received[0]?.body).toBe(received[1]?.body);
    expect(received.every((r) => r.verified)).toBe(true);

    const missing = await ctx.call('POST', `/v1/webhooks/${hook.id}/deliveries/dlv_nope/redeliver`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toEqual({ message: 'Delivery not found', code: 'not_found' });
  });

  it('signs with the regenerated secret at once: the old secret no longer verifies, even on retries', async () => {
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    const oldSecret = hook.secret;
    receiver.secret = oldSecret;
    const regenerated = await ctx.call('POST', `/v1/webhooks/${hook.id}/secret`);
    expect(regenerated.statusCode).toBe(200);
    const newSecret = regenerated.json().secret as string;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);

    // The receiver still knows only the old secret: it refuses, and the delivery is retried.
    const [deliveryId] = await enqueueRunEnd(ctx, finishedRun(deploymentId));
    const refused = await until(async () => {
      const row = await getDelivery(ctx, hook.id, deliveryId as string);
      return row.response_status === 401 ? row : undefined;
    });
    expect(refused.status).toBe('pending');
    const first = fromDelivery(deliveryId as string)[0];
    expect(first && verifySignature(oldSecret, first.headers, first.body)).toBe(false);
    expect(first && verifySignature(newSecret, first.headers, first.body)).toBe(true);

    receiver.secret = newSecret;
    await until(async () => (await getDelivery(ctx, hook.id, deliveryId as string)).status === 'succeeded');
  });

  it('does not follow redirects: a 3xx answer is a failed attempt', async () => {
    const elsewhere = await startReceiver();
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    receiver.secret = hook.secret;
    receiver.respond = () => ({ status: 302, headers: { location: elsewhere.url } });
    try {
      const [deliveryId] = await enqueueRunEnd(ctx, finishedRun(deploymentId));
      const row = await until(async () => {
        const found = await getDelivery(ctx, hook.id, deliveryId as string);
        return found.response_status === 302 ? found : undefined;
      });
      expect(row.error_message).toBe('Receiver answered 302; redirects are not followed');
      expect(elsewhere.received).toHaveLength(0);
    } finally {
      await elsewhere.close();
    }
  });
});

describe('outgoing webhook delivery: end of the schedule and timeouts', () => {
  let ctx: WebhookTestContext;
  let receiver: Receiver;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createWebhookTestContext({ WEBHOOK_RETRY_SCHEDULE: '0.05,0.05', WEBHOOK_TIMEOUT_SECONDS: '0.3' });
    receiver = await startReceiver();
    deploymentId = await createDeployment(ctx);
  });
  afterAll(async () => {
    await receiver.close();
    await ctx.close();
  });
  afterEach(() => deleteAllWebhooks(ctx));

  it('fails a delivery for good after the last retry of the schedule', async () => {
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    receiver.secret = hook.secret;
    receiver.respond = () => 503;
    const [deliveryId] = await enqueueRunEnd(ctx, finishedRun(deploymentId));
    const row = await until(async () => {
      const found = await getDelivery(ctx, hook.id, deliveryId as string);
      return found.status === 'failed' ? found : undefined;
    });
    // One attempt plus one per entry of the schedule.
    expect(row).toMatchObject({ attempts: 3, response_status: 503, error_message: 'Receiver answered 503' });
    expect(row.next_attempt_at).toBeNull();
    expect(receiver.received.filter((r) => r.headers['x-service-delivery'] === deliveryId)).toHaveLength(3);
    // The webhook stays enabled: only a 410 disables it.
    expect((await ctx.call('GET', `/v1/webhooks/${hook.id}`)).json().enabled).toBe(true);
  });

  it('gives up on an attempt that gets no answer within WEBHOOK_TIMEOUT_SECONDS', async () => {
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    receiver.secret = hook.secret;
    receiver.respond = () => null;
    const [deliveryId] = await enqueueRunEnd(ctx, finishedRun(deploymentId));
    const row = await until(async () => {
      const found = await getDelivery(ctx, hook.id, deliveryId as string);
      return found.attempts >= 1 ? found : undefined;
    });
    expect(row.response_status).toBeNull();
    expect(row.error_message).toBe('Timed out after 0.3 s without an answer');
  });
});
