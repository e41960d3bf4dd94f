import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Kysely } from 'kysely';
import type { Services } from '../compose.js';
import type { Config } from '../config.js';
import type { Database } from '../db/types.js';
import { assistantRoutes } from './assistants-routes.js';
import { cronRoutes } from './crons-routes.js';
import { installDetailErrors } from './errors.js';
import { infoRoutes } from './info.js';
import { runRoutes } from './runs.js';
import { storeRoutes } from './store-routes.js';
import { threadRoutes } from './threads-routes.js';

/** What every route file of the LangGraph API gets: the same services as /v1 (CONTRACTS §14). */
export interface LangGraphDeps {
  /**
   * Where the API is served, e.g. `/langgraph` (for `Content-Location` and `Location`). Not named
   * `prefix`: Fastify would take that register option as the routes' prefix a second time.
   */
  basePath: string;
  db: Kysely<Database>;
  config: Config;
  services: Services['services'];
}

export type LangGraphRoutes = FastifyPluginAsync<LangGraphDeps>;

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
