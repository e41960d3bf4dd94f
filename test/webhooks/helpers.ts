import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { DEFAULT_ORG_ID } from '../../src/access/bootstrap.js';
import type { AppDependencies } from '../../src/app.js';
import { createInstanceCaches } from '../../src/cache/instance-caches.js';
import type { Db } from '../../src/db/types.js';
import type { FinishedRun } from '../../src/run-record/types.js';
import { createWebhookService } from '../../src/webhooks/service.js';
import { startTestApp, type TestContext } from '../helpers/app.js';
import type { TestDatabase } from '../helpers/database.js';

export { until } from '../helpers/poll.js';

export type WebhookTestContext = TestContext;

/**
 * The app on a fresh database or on `database` (to restart on the same one), with fast webhook
 * retries and a fast-polling delivery worker.
 */
export const createWebhookTestContext = (
  env: Record<string, string> = {},
  options: { database?: TestDatabase; webhookWorker?: AppDependencies['webhookWorker'] } = {},
): Promise<WebhookTestContext> =>
  startTestApp({
    env: {
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '0.05,0.1,0.2',
      WEBHOOK_TIMEOUT_SECONDS: '5',
      ...env,
    },
    ...(options.database ? { database: options.database } : {}),
    webhookWorker: { pollIntervalMs: 50, ...options.webhookWorker },
  });

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
 * Writes a run's deliveries as the statement that ends a run does (the webhook hook's part of it),
 * over `run` as the ended row, so a test needs no real run; through `db` when given (a transaction).
 * Returns the delivery ids. test/webhooks/end-statement.test.ts ends real runs.
 */
export async function enqueueRunEnd(ctx: WebhookTestContext, run: FinishedRun, db: Db = ctx.database.handle.db) {
  const service = createWebhookService(ctx.database.handle.db, {
    allowPrivateUrls: true,
    caches: createInstanceCaches({ ...ctx.database.handle, listener: null }),
  });
  const part = service.joinRunEnd(run, null);
  if (!part) return [];
  const ended = sql`select ${run.id}::text as id, ${run.deployment_id}::text as deployment_id,
    ${run.environment}::text as environment, ${run.started_at}::timestamptz as started_at,
    ${run.completed_at}::timestamptz as completed_at`;
  const ctes = [['ended', ended] as const, ...part.ctes].map(([name, query]) => sql`${sql.id(name)} as (${query})`);
  const { rows } = await sql<{ result: unknown }>`with ${sql.join(ctes)} select ${part.result} as result`.execute(db);
  return part.written(rows[0]?.result).map((delivery) => delivery.id);
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
