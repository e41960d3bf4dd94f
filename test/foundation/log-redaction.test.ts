import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/logger.js';
import { createDeployment, createWebhookTestContext, type WebhookTestContext } from '../webhooks/helpers.js';

/** Sends one raw request line, so forms a client library would normalise reach the server as written. */
function rawPost(port: number, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(
        `POST ${target} HTTP/1.1\r\nHost: crewd.test\r\nContent-Type: application/json\r\n` +
          'Content-Length: 2\r\nConnection: close\r\n\r\n{}',
      );
    });
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
    });
    socket.on('error', reject);
    socket.on('end', () => resolve(Number(answer.split(' ')[1])));
  });
}

const percentEncoded = (text: string) =>
  [...text].map((char) => `%${char.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');

describe('redactUrl', () => {
  it.each([
    ['/webhooks/runs/secret-token', '/webhooks/runs/[redacted]'],
    ['/webhooks/runs/secret-token?x=1', '/webhooks/runs/[redacted]?x=1'],
    ['http://crewd.test/webhooks/runs/secret-token', '/webhooks/runs/[redacted]'],
    ['HTTPS://crewd.test:8080/webhooks/runs/secret-token', '/webhooks/runs/[redacted]'],
    ['/webhooks/%72uns/secret-token', '/webhooks/runs/[redacted]'],
    ['/%77ebhooks/runs/secret%2dtoken', '/webhooks/runs/[redacted]'],
    ['/webhooks/runs/%2573ecret', '/webhooks/runs/[redacted]'],
    ['//webhooks//runs/secret-token', '//webhooks//runs/[redacted]'],
    ['/webhooks/runs/secret%2Ftoken', '/webhooks/runs/[redacted]'],
    ['/WEBHOOKS/RUNS/secret-token', '/WEBHOOKS/RUNS/[redacted]'],
  ])('redacts %s', (url, logged) => {
    expect(redactUrl(url)).toBe(logged);
  });

  it('leaves other paths as they are', () => {
    expect(redactUrl('/v1/runs/run_1/events?last_event_id=3')).toBe('/v1/runs/run_1/events?last_event_id=3');
    expect(redactUrl('/v1/tables/a%20b')).toBe('/v1/tables/a%20b');
  });
});

describe('incoming-webhook tokens in the request log', () => {
  let ctx: WebhookTestContext;
  let port: number;
  let token: string;

  beforeAll(async () => {
    ctx = await createWebhookTestContext({ LOG_LEVEL: 'info' });
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    port = (ctx.app.server.address() as net.AddressInfo).port;
    const deploymentId = await createDeployment(ctx);
    const created = await ctx.call('POST', '/v1/incoming-webhooks', { body: { deployment_id: deploymentId } });
    token = created.json().token;
  });
  afterAll(() => ctx.close());

  it('never appear, whatever form the request line takes', async () => {
    const targets = [
      `/webhooks/runs/${token}`,
      `http://crewd.test/webhooks/runs/${token}`,
      `/webhooks/%72uns/${token}`,
      `/webhooks/runs/${percentEncoded(token)}`,
      `http://crewd.test/%77ebhooks/runs/${percentEncoded(token)}?a=1`,
      `//webhooks/runs/${token}`,
    ];
    const statuses: number[] = [];
    for (const target of targets) statuses.push(await rawPost(port, target));
    // The router took the first five as the token route (no running version: 400), not as unknown paths.
    expect(statuses).toEqual([400, 400, 400, 400, 400, 404]);
    const logs = ctx.logs();
    expect(logs).toContain('/webhooks/runs/[redacted]');
    expect(logs).not.toContain(token);
    expect(logs).not.toContain(percentEncoded(token));
    expect(logs).not.toContain(percentEncoded(token).toUpperCase());
  });
});
