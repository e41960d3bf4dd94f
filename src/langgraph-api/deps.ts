import type { FastifyPluginAsync } from 'fastify';
import type { Kysely } from 'kysely';
import type { InstanceCaches } from '../cache/instance-caches.js';
import type { Config } from '../config.js';
import type { CronService } from '../crons/service.js';
import type { Database } from '../db/types.js';
import type { RunService } from '../runs/service.js';
import type { RunStreams } from '../streams/streams.js';
import type { ThreadService } from '../threads/service.js';

/** What every route file of the LangGraph API gets: the same services as /v1 (CONTRACTS §14). */
export interface LangGraphDeps {
  /**
   * Where the API is served, e.g. `/langgraph` (for `Content-Location` and `Location`). Not named
   * `prefix`: Fastify would take that register option as the routes' prefix a second time.
   */
  basePath: string;
  db: Kysely<Database>;
  config: Config;
  /** The /v1 services the API shares (the composition root hands over its own). */
  services: {
    runs: RunService;
    threads: ThreadService;
    streams: RunStreams;
    caches: InstanceCaches;
    crons: CronService;
  };
}

/** A route file of the API: a Fastify plugin registered under the prefix with {@link LangGraphDeps}. */
export type LangGraphRoutes = FastifyPluginAsync<LangGraphDeps>;
