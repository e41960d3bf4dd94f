import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, type RunContext } from '../runs/helpers.js';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('METRICS_PORT', () => {
  let ctx: RunContext;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    ctx = await createRunContext({ METRICS_PORT: String(port), HOST: '127.0.0.1' });
  });
  afterAll(() => ctx.close());

  it('serves GET /metrics on its own port and not on the API port', async () => {
    await ctx.call('GET', '/v1/deployments');
    const scraped = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toContain('text/plain');
    // Latency of API routes is still measured, on the API port's requests.
    expect(await scraped.text()).toContain(
      'crewd_http_request_duration_seconds_count{method="GET",route="/v1/deployments"',
    );
    expect((await fetch(`${ctx.baseUrl}/metrics`)).status).toBe(404);
    const other = await fetch(`http://127.0.0.1:${port}/v1/deployments`);
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ error: { message: 'Only GET /metrics is served here', code: 'not_found' } });
  });

  it('closes the metrics port with the app', async () => {
    const second = await createRunContext({ METRICS_PORT: String(await freePort()), HOST: '127.0.0.1' });
    const metricsPort = Number(second.config.metricsPort);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200);
    await second.close();
    await expect(fetch(`http://127.0.0.1:${metricsPort}/metrics`)).rejects.toThrow();
  });
});
