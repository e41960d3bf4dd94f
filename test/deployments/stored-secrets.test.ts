import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { project, upload, waitForBuild } from '../builds/helpers.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createRunContext, crew, type RunContext, startRun, until, waitForRun } from '../runs/helpers.js';
import { type Receiver, startReceiver } from '../webhooks/helpers.js';

const KEY = 'k'.repeat(40);
const VARIABLE = 'variable-plain-value-1';
const ENV = 'env-plain-value-2';

/** Every stored secret as the database holds it, in one text. */
async function rawSecrets(ctx: RunContext): Promise<string> {
  const db = ctx.database.handle.db;
  const rows = await Promise.all([
    db.selectFrom('deployment_variables').select(['value', 'encrypted']).execute(),
    db.selectFrom('deployment_versions').select('env').execute(),
    db.selectFrom('webhooks').select('secret').execute(),
  ]);
  return JSON.stringify(rows);
}

/**
 * CONTRACTS §12 / issue 28: a start with SECRETS_KEY seals every secret stored in plain text before
 * (deployment variables, command versions' env, webhook signing secrets), and new ones as they are written.
 */
describe('stored secrets with SECRETS_KEY', () => {
  let database: TestDatabase;
  let ctx: RunContext;
  let deploymentId: string;
  let webhookSecret: string;
  let receiver: Receiver;

  beforeAll(async () => {
    database = await createTestDatabase();
    receiver = await startReceiver();
    const plain = await createRunContext({ WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }, undefined, database);
    deploymentId = (await plain.call('POST', '/v1/deployments', { body: { name: 'sealed' } })).json().id;
    await plain.call('POST', `/v1/deployments/${deploymentId}/versions`, {
      body: { command: crew('inspect.mjs'), environment: 'production', env: { FROM_ENV: ENV } },
    });
    await plain.call('PUT', `/v1/deployments/${deploymentId}/variables`, {
      body: { variables: { FROM_VARIABLE: VARIABLE } },
    });
    const webhook = await plain.call('POST', '/v1/webhooks', {
      body: { deployment_id: deploymentId, name: 'hook', url: receiver.url, events: ['run.succeeded'] },
    });
    webhookSecret = webhook.json().secret;
    receiver.secret = webhookSecret;
    const before = await rawSecrets(plain);
    for (const value of [VARIABLE, ENV, webhookSecret]) expect(before).toContain(value);
    await plain.closeApp();
    ctx = await createRunContext({ SECRETS_KEY: KEY, WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }, undefined, database);
  });
  afterAll(async () => {
    await ctx?.close();
    await database?.destroy();
    await receiver?.close();
  });

  it('seals the values stored before the key at start: no plain value is left in the rows', async () => {
    const after = await rawSecrets(ctx);
    for (const value of [VARIABLE, ENV, webhookSecret]) expect(after).not.toContain(value);
  });

  it('opens them for the runner, and signs deliveries with the secret it was given', async () => {
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id);
    expect(run.status).toBe('succeeded');
    expect(run.output.env).toMatchObject({ FROM_ENV: ENV, FROM_VARIABLE: VARIABLE });
    const delivery = await until(() => receiver.received.find((one) => one.body.includes(run.id)));
    expect(delivery.verified).toBe(true);
  });

  it('seals new values as they are written, and a second start leaves the sealed ones alone', async () => {
    const version = await ctx.call('POST', `/v1/deployments/${deploymentId}/versions`, {
      body: { command: crew('inspect.mjs'), environment: 'production', env: { FROM_ENV: 'env-new-value-3' } },
    });
    expect(version.json().env_keys).toEqual(['FROM_ENV']);
    const regenerated = (await ctx.call('POST', `/v1/webhooks/${await firstWebhook(ctx)}/secret`)).json().secret;
    receiver.secret = regenerated;
    const raw = await rawSecrets(ctx);
    expect(raw).not.toContain('env-new-value-3');
    expect(raw).not.toContain(regenerated);

    await ctx.closeApp();
    await ctx.restart();
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id);
    expect(run.status, run.error_message).toBe('succeeded');
    expect(run.output.env).toMatchObject({ FROM_ENV: 'env-new-value-3', FROM_VARIABLE: VARIABLE });
    const delivery = await until(() => receiver.received.find((one) => one.body.includes(run.id)));
    expect(delivery.verified).toBe(true);
  });

  it("seals a bundle version's env as it is stored", async () => {
    const uploaded = await upload(ctx, deploymentId, ENV_BUNDLE, '?environment=production');
    expect(uploaded.statusCode, uploaded.body).toBe(201);
    const version = await waitForBuild(ctx, deploymentId, uploaded.json().id);
    expect(version.status, JSON.stringify(version)).toBe('ready');
    expect(await rawSecrets(ctx)).not.toContain('bundle-env-value-4');
    const run = await waitForRun(ctx, (await startRun(ctx, deploymentId)).run_id);
    expect(run.status, run.error_message).toBe('succeeded');
    expect(run.output.env).toMatchObject({ FROM_BUNDLE: 'bundle-env-value-4', FROM_VARIABLE: VARIABLE });
  });
});

/** A bundle whose crewd.json gives the version an env, and whose crew reports its own. */
const ENV_BUNDLE = project({
  'crewd.json': JSON.stringify({ command: [process.execPath, 'crew.mjs'], env: { FROM_BUNDLE: 'bundle-env-value-4' } }),
  'crew.mjs':
    "process.stdin.resume(); process.stdin.on('end', () => console.log(JSON.stringify(" +
    "{ type: 'run.completed', data: { output: { env: process.env } } })));",
});

async function firstWebhook(ctx: RunContext): Promise<string> {
  return (await ctx.call('GET', '/v1/webhooks')).json().webhooks[0].id;
}
