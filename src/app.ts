import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { accessRoutes } from './access/routes.js';
import authPlugin from './auth/plugin.js';
import { buildRoutes } from './builds/routes.js';
import { composeServices, type ServiceDependencies } from './compose.js';
import { cronRoutes } from './crons/routes.js';
import { deploymentRoutes } from './deployments/routes.js';
import { consoleRoutes } from './http/console.js';
import { frameworkErrorReplies, installErrorHandling, MAX_PATH_PARAM_LENGTH } from './http/error-handler.js';
import { healthRoutes } from './http/health.js';
import { installJsonBodyParser } from './http/json-body.js';
import { registerOpenApi } from './http/openapi.js';
import { installSecurityHeaders } from './http/security-headers.js';
import { registerLangGraphApi } from './langgraph-api/plugin.js';
import { mcpRoutes } from './mcp/routes.js';
import { createMetricsListener } from './metrics/listener.js';
import { metricsRoutes } from './metrics/routes.js';
import { runRoutes } from './runs/routes.js';
import { tableRoutes } from './tables/routes.js';
import { threadRoutes } from './threads/routes.js';
import { usageRoutes } from './usage/routes.js';
import { incomingTriggerRoutes, incomingWebhookRoutes } from './webhooks/incoming-routes.js';
import { webhookRoutes } from './webhooks/routes.js';

export const VERSION = '0.1.0';

/** Largest request body accepted (a batch of 1000 rows fits comfortably). */
export const BODY_LIMIT_BYTES = 10 * 1024 * 1024;

export type AppDependencies = ServiceDependencies;

/** Builds the HTTP app from its dependencies; listening and signals belong to server.ts. */
export async function buildApp(dependencies: AppDependencies): Promise<FastifyInstance> {
  const { config, database, logger } = dependencies;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    trustProxy: config.trustProxy,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: frameworkErrorReplies(config.langgraphApiPrefix),
  });

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandling(app);
  installJsonBodyParser(app);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  installSecurityHeaders(app);

  const composed = await composeServices(dependencies);
  const { access, deployments, variables, builds, tables, rows, webhooks, incomingWebhooks, runs, threads } =
    composed.services;
  const { streams, caches, crons } = composed.services;
  app.addHook('onReady', composed.start);
  app.addHook('preClose', async () => composed.closeStreams());
  app.addHook('onClose', composed.stop);

  await registerOpenApi(app, VERSION);
  await app.register(metricsRoutes, {
    metrics: composed.metrics,
    serveRoute: config.metricsPort === undefined,
    token: config.metricsToken,
  });
  if (config.metricsPort !== undefined) {
    const metricsListener = createMetricsListener(composed.metrics, { port: config.metricsPort, host: config.host });
    app.addHook('onReady', async () => metricsListener.start());
    app.addHook('onClose', async () => {
      if (metricsListener.server.listening) await metricsListener.stop();
    });
  }
  await app.register(healthRoutes, { db: database.db });
  await app.register(authPlugin, {
    db: database.db,
    keys: caches.apiKeys,
    limits: {
      perKeyPerMinute: config.rateLimitPerMinute,
      failedAuthPerMinute: config.failedAuthLimitPerMinute,
      incomingWebhookPerMinute: config.incomingWebhookLimitPerMinute,
    },
    langgraphPrefix: config.langgraphApiPrefix,
  });
  await app.register(
    async (v1) => {
      await v1.register(accessRoutes, { access });
      await v1.register(deploymentRoutes, {
        deployments,
        builds,
        variables,
        maxBundleBytes: config.maxBundleBytes,
      });
      await v1.register(buildRoutes, { builds, deployments, streams });
      await v1.register(runRoutes, { runs, streams });
      await v1.register(threadRoutes, { threads });
      await v1.register(tableRoutes, { tables, rows });
      await v1.register(webhookRoutes, { webhooks });
      await v1.register(incomingWebhookRoutes, { incoming: incomingWebhooks });
      await v1.register(cronRoutes, { crons });
      await v1.register(usageRoutes, { usage: composed.services.usage });
    },
    { prefix: '/v1' },
  );
  await registerLangGraphApi(app, { db: database.db, config, services: composed.services });
  await app.register(incomingTriggerRoutes, { incoming: incomingWebhooks });
  await app.register(mcpRoutes, {
    db: database.db,
    runs,
    threads,
    streams,
    waitMs: config.mcpCallWaitSeconds * 1000,
    allowedOrigins: config.mcpAllowedOrigins,
    version: VERSION,
  });
  await app.register(consoleRoutes); // the web console at /console/
  return app;
}
