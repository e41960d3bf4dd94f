import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { accessRoutes } from './access/routes.js';
import { createAccessService } from './access/service.js';
import authPlugin from './auth/plugin.js';
import { buildRoutes } from './builds/routes.js';
import { createBuildService } from './builds/service.js';
import { createInstanceCaches } from './cache/instance-caches.js';
import type { Config } from './config.js';
import type { DatabaseHandle } from './db/connect.js';
import { createPgListener } from './db/pg-listener.js';
import { deploymentRoutes } from './deployments/routes.js';
import { createDeploymentService } from './deployments/service.js';
import { createVariableService } from './deployments/variables.js';
import { frameworkErrorReply, installErrorHandling, MAX_PATH_PARAM_LENGTH } from './http/error-handler.js';
import { healthRoutes } from './http/health.js';
import { installJsonBodyParser } from './http/json-body.js';
import { registerOpenApi } from './http/openapi.js';
import { createMetrics } from './metrics/registry.js';
import { metricsRoutes } from './metrics/routes.js';
import { countActiveRuns } from './runs/repository.js';
import { runRoutes } from './runs/routes.js';
import { createRunRuntime, type RunTimings } from './runs/runtime.js';
import { tableRoutes } from './tables/routes.js';
import { createRowService } from './tables/row-service.js';
import { createTableService } from './tables/service.js';
import { threadRoutes } from './threads/routes.js';
import { incomingTriggerRoutes, incomingWebhookRoutes } from './webhooks/incoming-routes.js';
import { createIncomingWebhookService } from './webhooks/incoming-service.js';
import { webhookRoutes } from './webhooks/routes.js';
import { createWebhookService } from './webhooks/service.js';
import { createDeliveryWorker } from './webhooks/worker.js';

export const VERSION = '0.1.0';

/** Largest request body accepted (a batch of 1000 rows fits comfortably). */
export const BODY_LIMIT_BYTES = 10 * 1024 * 1024;

export interface AppDependencies {
  config: Config;
  database: DatabaseHandle;
  logger: Logger;
  /** Test knobs of runs and event streams (keepalive, poll, kill grace, lease tick); defaults per CONTRACTS. */
  timings?: Partial<RunTimings>;
  /** Test knobs of the webhook delivery worker. */
  webhookWorker?: { pollIntervalMs?: number; concurrency?: number; listen?: boolean };
}

/** Builds the HTTP app from its dependencies; listening and signals belong to server.ts. */
export async function buildApp({
  config,
  database,
  logger,
  webhookWorker,
  timings,
}: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    trustProxy: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: frameworkErrorReply,
  });

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandling(app);
  installJsonBodyParser(app);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  const { db } = database;
  const metrics = createMetrics(() => countActiveRuns(db));
  const listener = database.pool ? createPgListener({ connection: database.pool.options, logger }) : null;
  const caches = createInstanceCaches({ db, backend: database.backend, listener });
  const access = createAccessService(db, caches);
  const deployments = createDeploymentService(db);
  const variables = createVariableService(db, config.secretsKey);
  const builds = createBuildService({
    db,
    logger,
    config,
    variables,
    bus: () => runtime.bus,
    instanceId: () => runtime.supervisor.instanceId,
  });
  const runtime = createRunRuntime({
    db,
    config,
    logger,
    deployments,
    timings,
    caches,
    listener,
    prepareVersion: builds.prepareVersion,
    observer: {
      runStarted: () => metrics.runsStarted.inc(),
      runFinished: (status) => metrics.runsFinished.inc({ status }),
      eventsRelayed: (count) => metrics.eventsRelayed.inc(count),
      streamOpened: () => metrics.openStreams.inc(),
      streamClosed: () => metrics.openStreams.dec(),
    },
  });
  const { runs, threads } = runtime;
  app.addHook('onReady', async () => {
    await variables.checkKey();
    await listener?.start();
    await runtime.start();
    await builds.start();
  });
  app.addHook('preClose', async () => runtime.closeStreams());
  app.addHook('onClose', async () => {
    await builds.stop();
    await runtime.stop();
    await listener?.stop();
  });
  const tables = createTableService(db);
  const rows = createRowService(db);
  const deliveryWorker = createDeliveryWorker({
    database,
    logger,
    timeoutSeconds: config.webhookTimeoutSeconds,
    retrySchedule: config.webhookRetrySchedule,
    allowPrivateUrls: config.webhookAllowPrivateUrls,
    onAttempt: (outcome) => metrics.deliveries.inc({ outcome }),
    ...webhookWorker,
  });
  const webhooks = createWebhookService(db, {
    caches,
    allowPrivateUrls: config.webhookAllowPrivateUrls,
    outbox: deliveryWorker.outbox,
  });
  runs.onRunFinished(
    async (trx, run) => {
      await webhooks.enqueueForRun(trx, run);
    },
    (run) => webhooks.hasWebhooks(run.deploymentId),
  );
  const incomingWebhooks = createIncomingWebhookService(db, { publicUrl: config.publicUrl, runs });
  app.addHook('onReady', async () => deliveryWorker.start());
  app.addHook('onClose', async () => deliveryWorker.stop());

  await registerOpenApi(app, VERSION);
  await app.register(metricsRoutes, { metrics });
  await app.register(healthRoutes, { db });
  await app.register(authPlugin, { db, keys: caches.apiKeys, rateLimitPerMinute: config.rateLimitPerMinute });
  await app.register(
    async (v1) => {
      await v1.register(accessRoutes, { access });
      await v1.register(deploymentRoutes, {
        deployments,
        builds,
        variables,
        maxBundleBytes: config.maxBundleBytes,
      });
      await v1.register(buildRoutes, { builds, deployments, streams: runtime.streams });
      await v1.register(runRoutes, { runs, streams: runtime.streams });
      await v1.register(threadRoutes, { threads });
      await v1.register(tableRoutes, { tables, rows });
      await v1.register(webhookRoutes, { webhooks });
      await v1.register(incomingWebhookRoutes, { incoming: incomingWebhooks });
    },
    { prefix: '/v1' },
  );
  await app.register(incomingTriggerRoutes, { incoming: incomingWebhooks });
  return app;
}
