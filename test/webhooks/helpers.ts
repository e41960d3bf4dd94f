import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { bootstrapDefaultOrganization, DEFAULT_ORG_ID } from '../../src/access/bootstrap.js';
import { type AppDependencies, buildApp } from '../../src/app.js';
import { createInstanceCaches } from '../../src/cache/instance-caches.js';
import { type Config, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import type { FinishedRun } from '../../src/runs/types.js';
import { createWebhookService } from '../../src/webhooks/service.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

export interface WebhookTestContext {
  app: FastifyInstance;
  database: TestDatabase;
  config: Config;
  /** Everything the app logged (at LOG_LEVEL, default silent). */
  logs(): string;
  call(
    method: InjectOptions['method'],
    url: string,
    options?: { key?: string | null; body?: unknown; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
  /** Closes the app only; the database stays for another app (a restart). */
  closeApp(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Builds the app like test/helpers/app.ts, on a fresh database or on `database` (to restart
 * on the same one), with a fast-polling delivery worker.
 */
export async function createWebhookTestContext(
  env: Record<string, string> = {},
  options: { database?: TestDatabase; webhookWorker?: AppDependencies['webhookWorker'] } = {},
): Promise<WebhookTestContext> {
  const config = loadConfig({
    BOOTSTRAP_API_KEY: ADMIN_KEY,
    LOG_LEVEL: 'silent',
    DATA_DIR: './data-test',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '0.05,0.1,0.2',
    WEBHOOK_TIMEOUT_SECONDS: '5',
    PATH: process.env.PATH ?? '',
    RUNNER_SANDBOX: process.env.RUNNER_SANDBOX,
    ...env,
  });
  const database = options.database ?? (await createTestDatabase());
  await bootstrapDefaultOrganization(database.handle.db, config.bootstrapApiKey);
  let logText = '';
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logText += chunk.toString();
      done();
    },
  });
  const app = await buildApp({
    config,
    database: database.handle,
    logger: createLogger(config.logLevel, sink),
    webhookWorker: { pollIntervalMs: 50, ...options.webhookWorker },
  });
  await app.ready();
  let appClosed = false;
  const closeApp = async () => {
    if (appClosed) return;
    appClosed = true;
    await app.close();
  };
  return {
    app,
    database,
    config,
    logs: () => logText,
    call(method, url, callOptions = {}) {
      const key = callOptions.key === undefined ? ADMIN_KEY : callOptions.key;
      const headers: Record<string, string> = { ...callOptions.headers };
      if (key !== null) headers.authorization = `Bearer ${key}`;
      return app.inject({
        method,
        url,
        headers,
        ...(callOptions.body === undefined ? {} : { payload: callOptions.body as object }),
      });
    },
    closeApp,
    async close() {
      await closeApp();
      await database.destroy();
    },
  };
}

export interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  body: string;
  /** Whether the signature verified with the receiver's secret, checked by the receiver's own code. */
  verified: boolean;
  receivedAt: number;
}

export interface Receiver {
  url: string;
  port: number;
  received: ReceivedDelivery[];
  /** The secret the receiver verifies with. */
  secret: string;
  /** The status the receiver answers with for a request; default 200 when verified, else 401. */
  respond: (delivery: ReceivedDelivery) => number | { status: number; headers?: Record<string, string> } | null;
  close(): Promise<void>;
}

/** Receiver-side verification, written apart from the service's signer on purpose. */
export function verifySignature(secret: string, headers: IncomingHttpHeaders, body: string): boolean {
  const timestamp = headers['x-service-timestamp'];
  const signature = headers['x-service-signature'];
  if (typeof timestamp !== 'string' || typeof signature !== 'string' || !/^\d+$/.test(timestamp)) return false;
  const expected = `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`;
  const a = Buffer.from(expected);
  const b = Buffer.from(signature);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A real HTTP receiver on 127.0.0.1 (port 0, or a given port to come back up on). */
export async function startReceiver(port = 0, secret = ''): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    secret,
    respond: (delivery) => (delivery.verified ? 200 : 401),
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const delivery: ReceivedDelivery = {
        headers: req.headers,
        body,
        verified: verifySignature(receiver.secret, req.headers, body),
        receivedAt: Date.now(),
      };
      receiver.received.push(delivery);
      const answer = receiver.respond(delivery);
      if (answer === null) return; // never answer: the sender must time out
      const { status, headers } = typeof answer === 'number' ? { status: answer, headers: {} } : answer;
      res.writeHead(status, { 'content-type': 'text/plain', ...headers });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hook`;
  receiver.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** A port nothing listens on (for "receiver down"); a receiver can start on it later. */
export async function freePort(): Promise<number> {
  const probe = await startReceiver();
  await probe.close();
  return probe.port;
}

/** Polls `check` until it returns a value other than undefined/false; fails after `timeoutMs`. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export async function createDeployment(ctx: WebhookTestContext, name = 'hooks'): Promise<string> {
  const response = await ctx.call('POST', '/v1/deployments', { body: { name } });
  if (response.statusCode !== 201) throw new Error(`creating deployment failed: ${response.body}`);
  return response.json().id;
}

export async function createWebhook(
  ctx: WebhookTestContext,
  body: Record<string, unknown>,
): Promise<{ id: string; secret: string }> {
  const response = await ctx.call('POST', '/v1/webhooks', {
    body: { name: 'hook', events: ['run.succeeded', 'run.failed'], ...body },
  });
  if (response.statusCode !== 201) throw new Error(`creating webhook failed: ${response.body}`);
  return response.json();
}

export function finishedRun(deploymentId: string, overrides: Partial<FinishedRun> = {}): FinishedRun {
  const completed = new Date();
  return {
    id: `run_test${Math.random().toString(36).slice(2, 12)}`,
    org_id: DEFAULT_ORG_ID,
    deployment_id: deploymentId,
    environment: 'production',
    thread_id: null,
    status: 'succeeded',
    output: { answer: 42 },
    values: undefined,
    error_message: null,
    started_at: new Date(completed.getTime() - 1000),
    completed_at: completed,
    ...overrides,
  };
}

/**
 * Ends a run the way the runs service does: the webhook hook writes its deliveries inside a
 * transaction. Returns the delivery ids.
 */
export async function enqueueRunEnd(ctx: WebhookTestContext, run: FinishedRun): Promise<string[]> {
  const service = createWebhookService(ctx.database.handle.db, {
    allowPrivateUrls: true,
    caches: createInstanceCaches({ ...ctx.database.handle, listener: null }),
  });
  return ctx.database.handle.db.transaction().execute((trx) => service.enqueueForRun(trx, run));
}

export async function getDelivery(ctx: WebhookTestContext, webhookId: string, deliveryId: string) {
  const response = await ctx.call('GET', `/v1/webhooks/${webhookId}/deliveries/${deliveryId}`);
  if (response.statusCode !== 200) throw new Error(`reading delivery failed: ${response.body}`);
  return response.json();
}

/** Deletes every webhook of the default organization, so one test's hooks never catch another's runs. */
export async function deleteAllWebhooks(ctx: WebhookTestContext): Promise<void> {
  const { webhooks } = (await ctx.call('GET', '/v1/webhooks?limit=1000')).json() as { webhooks: Array<{ id: string }> };
  for (const hook of webhooks) await ctx.call('DELETE', `/v1/webhooks/${hook.id}`);
}
