import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createDeployment,
  createWebhook,
  createWebhookTestContext,
  deleteAllWebhooks,
  type Receiver,
  startReceiver,
  until,
  type WebhookTestContext,
} from './helpers.js';

const CREWS = path.resolve(import.meta.dirname, '../../examples/crews');
const crew = (file: string) => [process.execPath, path.join(CREWS, file)];

describe('webhooks with real runs', () => {
  let ctx: WebhookTestContext;
  let receiver: Receiver;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createWebhookTestContext();
    receiver = await startReceiver();
    deploymentId = await createDeployment(ctx, 'echo');
    const version = await ctx.call('POST', `/v1/deployments/${deploymentId}/versions`, {
      body: { command: crew('trivial.mjs'), environment: 'production' },
    });
    expect(version.statusCode).toBe(201);
  });
  afterAll(async () => {
    await receiver.close();
    await ctx.close();
  });
  afterEach(() => deleteAllWebhooks(ctx));

  async function finished(runId: string) {
    return until(async () => {
      const run = (await ctx.call('GET', `/v1/runs/${runId}`)).json();
      return ['succeeded', 'failed', 'canceled'].includes(run.status) ? run : undefined;
    });
  }

  async function incomingUrl(environment: 'production' | 'staging' = 'production', deployment = deploymentId) {
    const response = await ctx.call('POST', '/v1/incoming-webhooks', {
      body: { deployment_id: deployment, environment },
    });
    expect(response.statusCode).toBe(201);
    return {
      ...(response.json() as { id: string; token: string; url: string }),
      path: new URL(response.json().url).pathname,
    };
  }

  it('starts a run from a token URL, without a key, with the body as input', async () => {
    const hook = await incomingUrl();
    const response = await ctx.call('POST', hook.path, { key: null, body: { topic: 'otters', n: 3 } });
    expect(response.statusCode).toBe(202);
    const created = response.json();
    expect(created).toEqual({
      run_id: expect.stringMatching(/^run_/),
      version_id: expect.stringMatching(/^ver_/),
      version_number: 1,
      status: 'running',
    });
    const run = await finished(created.run_id);
    expect(run).toMatchObject({
      deployment_id: deploymentId,
      status: 'succeeded',
      input: { topic: 'otters', n: 3 },
      output: { echo: { topic: 'otters', n: 3 } },
    });

    const empty = await ctx.call('POST', hook.path, { key: null });
    expect(empty.statusCode, empty.body).toBe(202);
    expect((await finished(empty.json().run_id)).input).toEqual({});

    for (const body of [[1], 'text', 42, null]) {
      const bad = await ctx.call('POST', hook.path, {
        key: null,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(bad.statusCode, JSON.stringify(body)).toBe(400);
      expect(bad.json().error.code).toBe('bad_request');
    }
  });

  it('honours Idempotency-Key on the token URL', async () => {
    const hook = await incomingUrl();
    const headers = { 'idempotency-key': 'order-1234' };
    const first = await ctx.call('POST', hook.path, { key: null, headers, body: { order: 1234 } });
    const again = await ctx.call('POST', hook.path, { key: null, headers, body: { order: 1234 } });
    expect(first.statusCode).toBe(202);
    expect(again.statusCode).toBe(202);
    expect(again.json().run_id).toBe(first.json().run_id);
    const other = await ctx.call('POST', hook.path, { key: null, headers, body: { order: 9999 } });
    expect(other.statusCode).toBe(409);
    expect(other.json().error.code).toBe('conflict');
    // Another incoming webhook is another scope: the same key starts its own run.
    const second = await incomingUrl();
    const elsewhere = await ctx.call('POST', second.path, { key: null, headers, body: { order: 1234 } });
    expect(elsewhere.statusCode).toBe(202);
    expect(elsewhere.json().run_id).not.toBe(first.json().run_id);
    await finished(first.json().run_id);
    await finished(elsewhere.json().run_id);
  });

  it('answers 400 when the environment has no running version', async () => {
    const hook = await incomingUrl('staging');
    const response = await ctx.call('POST', hook.path, { key: null, body: {} });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toEqual({
      message: 'No running version found for staging environment',
      code: 'bad_request',
    });
  });

  it('writes deliveries for runs that end after a webhook is created, and none once it is deleted', async () => {
    const start = async () => {
      const response = await ctx.call('POST', '/v1/runs', { body: { deployment_id: deploymentId, input: {} } });
      expect(response.statusCode).toBe(202);
      return (await finished(response.json().run_id)).id as string;
    };
    const deliveriesOf = async (runId: string) =>
      ctx.database.handle.db.selectFrom('webhook_deliveries').select('id').where('run_id', '=', runId).execute();
    // Without webhooks a run ends without looking for any; that knowledge must not outlive a new webhook.
    expect(await deliveriesOf(await start())).toHaveLength(0);
    const webhook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    receiver.secret = webhook.secret;
    const withHook = await start();
    expect(await deliveriesOf(withHook)).toHaveLength(1);
    await until(() => receiver.received.find((r) => JSON.parse(r.body).data.run_id === withHook));
    expect((await ctx.call('DELETE', `/v1/webhooks/${webhook.id}`)).statusCode).toBe(200);
    expect(await deliveriesOf(await start())).toHaveLength(0);
  });

  it('sends run.succeeded for a run started by a token URL, signed, with the run’s own times', async () => {
    const webhook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    receiver.secret = webhook.secret;
    const hook = await incomingUrl();
    const response = await ctx.call('POST', hook.path, { key: null, body: { hello: 'world' } });
    const runId = response.json().run_id as string;
    const run = await finished(runId);

    const received = await until(() => receiver.received.find((r) => JSON.parse(r.body).data.run_id === runId));
    expect(received.verified).toBe(true);
    expect(received.headers['x-service-event']).toBe('run.succeeded');
    const body = JSON.parse(received.body);
    expect(body.data).toEqual({
      run_id: runId,
      deployment_id: deploymentId,
      status: 'succeeded',
      output: { echo: { hello: 'world' } },
      started_at: run.started_at,
      completed_at: run.completed_at,
    });
    const deliveries = (await ctx.call('GET', `/v1/webhooks/${webhook.id}/deliveries`)).json().deliveries;
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({
      run_id: runId,
      event: 'run.succeeded',
      id: received.headers['x-service-delivery'],
    });
    await until(async () => {
      const list = (await ctx.call('GET', `/v1/webhooks/${webhook.id}/deliveries`)).json().deliveries;
      return list[0]?.status === 'succeeded';
    });
  });

  it('sends one run.succeeded for a run in a thread, whose end also gives the thread back', async () => {
    const webhook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    receiver.secret = webhook.secret;
    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();
    const created = await ctx.call('POST', `/v1/threads/${thread.thread_id}/runs`, {
      body: { input: { in: 'thread' } },
    });
    expect(created.statusCode).toBe(202);
    const run = await finished(created.json().run_id);
    expect(run.status).toBe('succeeded');

    const received = await until(() => receiver.received.find((r) => JSON.parse(r.body).data.run_id === run.id));
    expect(received.verified).toBe(true);
    expect(JSON.parse(received.body).data).toEqual({
      run_id: run.id,
      deployment_id: deploymentId,
      status: 'succeeded',
      output: { echo: { in: 'thread' } },
      started_at: run.started_at,
      completed_at: run.completed_at,
    });
    expect((await ctx.call('GET', `/v1/threads/${thread.thread_id}`)).json().status).toBe('idle');
    const deliveries = await until(async () => {
      const list = (await ctx.call('GET', `/v1/webhooks/${webhook.id}/deliveries`)).json().deliveries;
      return list.every((d: { status: string }) => d.status !== 'pending') ? list : undefined;
    });
    expect(deliveries.map((d: { run_id: string }) => d.run_id)).toEqual([run.id]);
  });

  it('sends run.failed with the error, nothing for a canceled run, and each end exactly once', async () => {
    const failing = await createDeployment(ctx, 'failing');
    await ctx.call('POST', `/v1/deployments/${failing}/versions`, {
      body: { command: crew('failing.mjs'), environment: 'production' },
    });
    const slow = await createDeployment(ctx, 'slow');
    await ctx.call('POST', `/v1/deployments/${slow}/versions`, {
      body: { command: crew('slow.mjs'), environment: 'production' },
    });
    const hooks = await Promise.all(
      [deploymentId, failing, slow].map((id) => createWebhook(ctx, { deployment_id: id, url: receiver.url })),
    );
    receiver.respond = () => 200;
    const before = receiver.received.length;

    const failed = (await ctx.call('POST', '/v1/runs', { body: { deployment_id: failing } })).json().run_id as string;
    const canceled = (await ctx.call('POST', '/v1/runs', { body: { deployment_id: slow } })).json().run_id as string;
    const succeeded: string[] = [];
    for (let i = 0; i < 5; i++) {
      const created = await ctx.call('POST', '/v1/runs', { body: { deployment_id: deploymentId, input: { i } } });
      succeeded.push(created.json().run_id);
    }
    expect((await ctx.call('POST', `/v1/runs/${canceled}/cancel`)).statusCode).toBe(200);
    const failedRun = await finished(failed);
    for (const id of succeeded) await finished(id);

    const byRun = () => {
      const counts = new Map<string, number>();
      for (const r of receiver.received.slice(before)) {
        const id = JSON.parse(r.body).data.run_id as string;
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
      return counts;
    };
    await until(() => [failed, ...succeeded].every((id) => byRun().has(id)));
    // Let any duplicate show up before counting: every delivery row is final by now.
    await until(async () => {
      for (const hook of hooks) {
        const list = (await ctx.call('GET', `/v1/webhooks/${hook.id}/deliveries`)).json().deliveries;
        if (list.some((d: { status: string }) => d.status === 'pending')) return false;
      }
      return true;
    });
    const counts = byRun();
    for (const id of [failed, ...succeeded]) expect(counts.get(id), id).toBe(1);
    expect(counts.has(canceled)).toBe(false);

    const failure = receiver.received.find((r) => JSON.parse(r.body).data.run_id === failed);
    const payload = JSON.parse(failure?.body ?? '{}');
    expect(payload.event).toBe('run.failed');
    expect(payload.data).toEqual({
      run_id: failed,
      deployment_id: failing,
      status: 'failed',
      output: {},
      error_message: failedRun.error_message,
      started_at: failedRun.started_at,
      completed_at: failedRun.completed_at,
    });
    expect(payload.data.error_message).toBe('the crew could not finish its task');
  });
});

describe('webhooks with real runs, a long poll interval', () => {
  let ctx: WebhookTestContext;
  let receiver: Receiver;

  beforeAll(async () => {
    ctx = await createWebhookTestContext({}, { webhookWorker: { pollIntervalMs: 5_000 } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await ctx.close();
  });

  it('delivers each run end once, without waiting for the poll interval', async () => {
    const deploymentId = await createDeployment(ctx, 'echo');
    await ctx.call('POST', `/v1/deployments/${deploymentId}/versions`, {
      body: { command: crew('trivial.mjs'), environment: 'production' },
    });
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: receiver.url });
    receiver.secret = hook.secret;
    const runIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      runIds.push(
        (await ctx.call('POST', '/v1/runs', { body: { deployment_id: deploymentId, input: { i } } })).json().run_id,
      );
    }
    const deliveries = await until(async () => {
      const list = (await ctx.call('GET', `/v1/webhooks/${hook.id}/deliveries`)).json().deliveries;
      return list.length === 3 && list.every((d: { status: string }) => d.status === 'succeeded') ? list : undefined;
    });
    expect(new Set(deliveries.map((d: { run_id: string }) => d.run_id))).toEqual(new Set(runIds));
    expect(receiver.received).toHaveLength(3);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
  });
});
