import type { FastifyPluginAsync } from 'fastify';
import type { Kysely } from 'kysely';
import type { Services } from '../compose.js';
import type { Config } from '../config.js';
import type { Database } from '../db/types.js';

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

/** A route file of the API: a Fastify plugin registered under the prefix with {@link LangGraphDeps}. */
export type LangGraphRoutes = FastifyPluginAsync<LangGraphDeps>;
