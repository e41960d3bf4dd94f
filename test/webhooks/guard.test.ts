import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forbiddenLiteralHost, isForbiddenAddress, resolveAllowedAddress } from '../../src/webhooks/address-guard.js';
import {
  createDeployment,
  createWebhook,
  createWebhookTestContext,
  enqueueRunEnd,
  finishedRun,
  getDelivery,
  type Receiver,
  startReceiver,
  until,
  type WebhookTestContext,
} from './helpers.js';

describe('address guard', () => {
  it.each([
    '127.0.0.1',
    '127.1.2.3',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '169.254.0.1',
    '100.64.0.1',
    '100.100.100.200',
    '224.0.0.1',
    '255.255.255.255',
    '198.18.0.1',
    '::',
    '::1',
    'fe80::1',
    'fe80::1%eth0',
    'fc00::1',
    'fd00:ec2::254',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::ffff:10.0.0.1',
    '::127.0.0.1',
    '64:ff9b::a00:1',
    '2002:7f00:1::',
    '2001:db8::1',
  ])('refuses %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
  ])('allows %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });

  it('judges literal hosts the URL parser normalises', () => {
    expect(forbiddenLiteralHost(new URL('http://2130706433/'))).toBe('127.0.0.1');
    expect(forbiddenLiteralHost(new URL('http://0x7f.1/'))).toBe('127.0.0.1');
    expect(forbiddenLiteralHost(new URL('http://[::ffff:127.0.0.1]:8080/'))).toBe('::ffff:7f00:1');
    expect(forbiddenLiteralHost(new URL('https://example.com/'))).toBeNull();
  });

  it('refuses a host name that resolves to an internal address', async () => {
    await expect(resolveAllowedAddress('localhost')).rejects.toThrow(/Refused to connect to localhost/);
    await expect(resolveAllowedAddress('127.0.0.1')).rejects.toThrow(/WEBHOOK_ALLOW_PRIVATE_URLS=true/);
  });

  it('refuses localhost names without asking DNS', async () => {
    await expect(resolveAllowedAddress('api.localhost')).rejects.toThrow(/Refused to connect to api\.localhost/);
    await expect(resolveAllowedAddress('localhost.')).rejects.toThrow(/Refused to connect to localhost\./);
  });
});

describe('outgoing webhooks without WEBHOOK_ALLOW_PRIVATE_URLS', () => {
  let ctx: WebhookTestContext;
  let receiver: Receiver;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createWebhookTestContext({ WEBHOOK_ALLOW_PRIVATE_URLS: 'false' });
    receiver = await startReceiver();
    deploymentId = await createDeployment(ctx);
  });
  afterAll(async () => {
    await receiver.close();
    await ctx.close();
  });

  it.each([
    'http://127.0.0.1:8080/hook',
    'http://[::1]/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://10.0.0.5/hook',
    'http://192.168.0.10/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://2130706433/hook',
    'http://0.0.0.0/',
    'http://localhost:8080/hook',
    'http://LOCALHOST/hook',
    'http://localhost./hook',
    'http://api.localhost/hook',
    'http://a.b.localhost./hook',
  ])('refuses %s at create and update time, naming the setting that allows it', async (url) => {
    const created = await ctx.call('POST', '/v1/webhooks', {
      body: { deployment_id: deploymentId, name: 'bad', url, events: ['run.succeeded'] },
    });
    expect(created.statusCode).toBe(400);
    expect(created.json().error.code).toBe('bad_request');
    expect(created.json().error.message).toMatch(/^url: .*not allowed/);
    expect(created.json().error.message).toContain('WEBHOOK_ALLOW_PRIVATE_URLS=true');

    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: 'https://hooks.example.com/in' });
    const patched = await ctx.call('PATCH', `/v1/webhooks/${hook.id}`, { body: { url } });
    expect(patched.statusCode).toBe(400);
    await ctx.call('DELETE', `/v1/webhooks/${hook.id}`);
  });

  it.each(['http://localhost.example.com/hook', 'https://hooks.example.com/in', 'http://notlocalhost/hook'])(
    'accepts %s at create time',
    async (url) => {
      const hook = await createWebhook(ctx, { deployment_id: deploymentId, url });
      await ctx.call('DELETE', `/v1/webhooks/${hook.id}`);
    },
  );

  it('refuses a name that resolves to loopback at connect time, and sends nothing', async () => {
    // Made before localhost names were refused at creation: the delivery must still refuse it.
    const hook = await createWebhook(ctx, { deployment_id: deploymentId, url: 'https://hooks.example.com/in' });
    await ctx.database.handle.db
      .updateTable('webhooks')
      .set({ url: `http://localhost:${receiver.port}/hook` })
      .where('id', '=', hook.id)
      .execute();
    receiver.secret = hook.secret;
    const [deliveryId] = await enqueueRunEnd(ctx, finishedRun(deploymentId));
    const row = await until(async () => {
      const found = await getDelivery(ctx, hook.id, deliveryId as string);
      return found.attempts >= 1 ? found : undefined;
    });
    expect(row.response_status).toBeNull();
    expect(row.error_message).toMatch(/^Refused to connect to localhost/);
    expect(row.error_message).toContain('WEBHOOK_ALLOW_PRIVATE_URLS=true');
    expect(receiver.received).toHaveLength(0);
    await ctx.call('DELETE', `/v1/webhooks/${hook.id}`);
  });
});
