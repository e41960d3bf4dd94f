import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.js';
import { startServer } from '../helpers/server-process.js';
import { CREWS, until } from '../runs/helpers.js';

const KEY = 'tracing-test-bootstrap-key-0123456789';
const LOG_LOADS = path.resolve(import.meta.dirname, 'fixtures/log-otel-loads.mjs');

/** A real crewd process runs one run; answers what it wrote (module loads among it). */
async function serveOneRun(env: Record<string, string>): Promise<string> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'crewd-tracing-'));
  const database = process.env.TEST_DATABASE_URL ? await createTestDatabase() : undefined;
  const backend: Record<string, string> = database ? { DATABASE_URL: database.url as string } : {};
  const server = await startServer({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: KEY, ...backend, ...env }, [
    '--import',
    LOG_LOADS,
  ]);
  const call = async (method: string, url: string, body?: unknown) => {
    const response = await fetch(`${server.baseUrl}${url}`, {
      method,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return (await response.json()) as Record<string, unknown>;
  };
  try {
    const deployment = await call('POST', '/v1/deployments', { name: 'traced' });
    await call('POST', `/v1/deployments/${deployment.id}/versions`, {
      command: [process.execPath, path.join(CREWS, 'scripted.mjs')],
      environment: 'production',
    });
    const events = [{ type: 'llm.call', data: { model: 'gpt-4o-mini', usage: { input_tokens: 1, output_tokens: 1 } } }];
    const run = await call('POST', '/v1/runs', { deployment_id: deployment.id, input: { events } });
    const ended = await until(async () => {
      const found = await call('GET', `/v1/runs/${run.run_id}`);
      return found.status === 'succeeded' ? found : null;
    });
    expect(ended.usage).not.toBeNull();
    return server.output();
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    await database?.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('tracing turned off', () => {
  it('loads no OpenTelemetry module, where tracing on does', async () => {
    const off = await serveOneRun({});
    expect(off).toContain('Server listening');
    expect(off).not.toContain('module loaded:');

    const receiver = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.end('{}'));
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const { port } = receiver.address() as AddressInfo;
    try {
      const on = await serveOneRun({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` });
      expect(on).toContain('module loaded: file://');
      expect(on).toContain('@opentelemetry/sdk-trace-base');
    } finally {
      receiver.close();
    }
    // Two real crewd processes start one after the other.
  }, 120_000);
});
