import type { FastifyInstance } from 'fastify';
import { assistantRoutes } from './assistants-routes.js';
import { cronRoutes } from './crons-routes.js';
import type { LangGraphDeps, LangGraphRoutes } from './deps.js';
import { installDetailErrors } from './errors.js';
import { infoRoutes } from './info.js';
import { runRoutes } from './runs.js';
import { storeRoutes } from './store-routes.js';
import { threadRoutes } from './threads-routes.js';

/**
 * The route files of the API, registered in this order under the prefix. A new file (runs,
 * streams…) adds one entry here.
 */
export const routes: LangGraphRoutes[] = [
  infoRoutes,
  assistantRoutes,
  threadRoutes,
  storeRoutes,
  cronRoutes,
  runRoutes,
];

/** Paths under the prefix that answer without a key, as the official server's do. */
export const PUBLIC_PATHS = ['/ok', '/info'];

/**
 * The LangGraph Agent Server API (CONTRACTS §14): a translation over crewd's services, with its
 * own error bodies (`{"detail": …}`). Keys are checked by the auth plugin (x-api-key or bearer).
 */
export async function registerLangGraphApi(app: FastifyInstance, deps: Omit<LangGraphDeps, 'basePath'>) {
  const prefix = deps.config.langgraphApiPrefix;
  if (prefix === undefined) return;
  await app.register(
    async (scope) => {
      installDetailErrors(scope, prefix);
      for (const route of routes) await scope.register(route, { ...deps, basePath: prefix });
    },
    { prefix },
  );
}
