import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { accessRoutes } from './access/routes.js';
import { createAccessService } from './access/service.js';
import authPlugin from './auth/plugin.js';
import type { Config } from './config.js';
import type { DatabaseHandle } from './db/connect.js';
import { deploymentRoutes } from './deployments/routes.js';
import { createDeploymentService } from './deployments/service.js';
import { installErrorHandling } from './http/error-handler.js';
import { healthRoutes } from './http/health.js';
import { installJsonBodyParser } from './http/json-body.js';
import { registerOpenApi } from './http/openapi.js';

export const VERSION = '0.1.0';

/** Largest request body accepted (a batch of 1000 rows fits comfortably). */
export const BODY_LIMIT_BYTES = 10 * 1024 * 1024;

export interface AppDependencies {
  config: Config;
  database: DatabaseHandle;
  logger: Logger;
}

/** Builds the HTTP app from its dependencies; listening and signals belong to server.ts. */
export async function buildApp({ config, database, logger }: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    trustProxy: true,
    routerOptions: { ignoreTrailingSlash: true },
  });

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  installErrorHandling(app);
  installJsonBodyParser(app);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  const { db } = database;
  const access = createAccessService(db);
  const deployments = createDeploymentService(db);
  app.decorate('services', { access, deployments });

  await registerOpenApi(app, VERSION);
  await app.register(healthRoutes, { db });
  await app.register(authPlugin, { db });
  await app.register(
    async (v1) => {
      await v1.register(accessRoutes, { access });
      await v1.register(deploymentRoutes, { deployments });
    },
    { prefix: '/v1' },
  );
  void config;
  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    services: {
      access: ReturnType<typeof createAccessService>;
      deployments: ReturnType<typeof createDeploymentService>;
    };
  }
}
