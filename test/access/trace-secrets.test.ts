import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, deploy, type RunContext, until, waitForRun } from '../runs/helpers.js';

const VARIABLE = 'sk-variable-value-0123456789';
const VERSION_ENV = 'version-env-value-9876543210';

/** A crew whose failures say its secrets: a task's error, then its last line on stderr as it exits 1. */
const CREW = `
process.stdin.resume();
process.stdin.on('end', () => {
  const secrets = process.env.LLM_KEY + ' ' + process.env.DB_PASSWORD;
  const out = (type, data) => process.stdout.write(JSON.stringify({ type, data }) + '\\n');
  out('task.started', { task: 'call' });
  out('task.failed', { task: 'call', error: 'provider refused key ' + secrets });
  process.stderr.write('connecting with ' + secrets + '\\n');
  process.exit(1);
});
`;

/** An OTLP/HTTP receiver (http/json) on loopback that keeps each request's body as it came. */
async function startReceiver(): Promise<{ server: Server; url: string; bodies: string[] }> {
  const bodies: string[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString());
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies };
}

/**
 * A run's trace goes to the operator's OTLP collector, shared by every organization: the errors it carries are the
 * crew's own words (a task's error, the runner's last stderr line), and a crew that prints its secrets as it fails
 * must not send them there. The run's own record (GET /v1/runs) keeps its error as it was, for its organization.
 */
describe("a version's secrets in its runs' traces", () => {
  let ctx: RunContext;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    ctx = await createRunContext({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
  });
  afterAll(async () => {
    await ctx?.close();
    receiver?.server.close();
  });

  it('are masked in the spans’ errors', async () => {
    const { deploymentId } = await deploy(ctx, [process.execPath, '-e', CREW], { env: { DB_PASSWORD: VERSION_ENV } });
    const variables = await ctx.call('PUT', `/v1/deployments/${deploymentId}/variables`, {
      body: { variables: { LLM_KEY: VARIABLE } },
    });
    expect(variables.statusCode, variables.body).toBe(200);
    const created = await ctx.call('POST', '/v1/runs', { body: { deployment_id: deploymentId, input: {} } });
    expect(created.statusCode, created.body).toBe(202);
    const runId = created.json().run_id as string;
    const run = await waitForRun(ctx, runId);
    expect(run.status).toBe('failed');
    expect(run.error_message).toContain(VARIABLE);

    const exported = await until(() => receiver.bodies.find((body) => body.includes(runId)));
    expect(exported).toContain('task call');
    expect(exported).not.toContain(VARIABLE);
    expect(exported).not.toContain(VERSION_ENV);
    expect(exported).toContain('provider refused key [redacted] [redacted]');
    expect(exported).toContain('connecting with [redacted] [redacted]');
  });
});
