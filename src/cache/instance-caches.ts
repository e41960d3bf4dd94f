import { type Kysely, sql, type Transaction } from 'kysely';
import type { Principal } from '../auth/plugin.js';
import type { Backend } from '../db/connect.js';
import type { ListenerState } from '../db/pg-listener.js';
import type { Database } from '../db/types.js';
import { createMemoCache, type MemoCache } from '../memo-cache.js';

/** Where instances tell each other which cache to drop; the payload is a cache's name. */
export const CACHE_CHANNEL = 'crewd_cache';

/**
 * The in-process caches of the hottest reads: a key's principal (every request), a finished run
 * (what clients poll), whether a deployment has webhooks (every run's end) and the deployment a
 * LangGraph graph names (every run of that API). A change to what
 * they hold drops them on every instance.
 */
export interface InstanceCaches {
  apiKeys: MemoCache<Principal>;
  /** Terminal runs as their JSON answer. They no longer change, except a thread's delete unsetting `thread_id`. */
  runs: MemoCache<string>;
  /** Whether a deployment has webhooks, asked at every run's end; changed by creating and deleting webhooks. */
  webhookDeployments: MemoCache<boolean>;
  /**
   * The deployment a LangGraph `graph_id` (a deployment's name or id) names, by `<org id>/<graph id>`, asked by
   * every run of the LangGraph API; changed by creating and renaming deployments (they are never deleted).
   */
  graphDeployments: MemoCache<GraphDeployment>;
  /** Runs `change` in a transaction that drops `name` everywhere: on other instances at commit, here right after. */
  changing<T>(name: CacheName, change: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
  /** A notification's payload on `crewd_cache` (another instance changed what a cache holds): drops that cache. */
  heard(name: string): void;
  /** The listener's connection went down or came back: notifications may have been missed, so every cache is dropped. */
  connectionChanged(): void;
}

/** A deployment as a LangGraph graph: its id and its default assistant's. */
export interface GraphDeployment {
  deploymentId: string;
  assistantId: string;
}

const CACHE_NAMES = ['api_keys', 'runs', 'webhooks', 'deployments'] as const;
export type CacheName = (typeof CACHE_NAMES)[number];
const isCacheName = (name: string): name is CacheName => (CACHE_NAMES as readonly string[]).includes(name);

export function createInstanceCaches(options: {
  db: Kysely<Database>;
  backend: Backend;
  /**
   * On PostgreSQL: the listener by which other instances' drops arrive (its handlers of `crewd_cache`
   * and of its connection are `heard` and `connectionChanged`). Without it there, nothing is cached.
   */
  listener: ListenerState | null;
}): InstanceCaches {
  const { db, listener } = options;
  // The embedded database has one process, so dropping locally is enough. On PostgreSQL other
  // instances change things too: cache only while their notifications can reach us.
  const usable = options.backend === 'pglite' ? () => true : () => listener?.connected ?? false;
  const caches: Record<CacheName, MemoCache<unknown>> = {
    // A short life as well, in case the notification connection dies without anyone noticing.
    api_keys: createMemoCache<Principal>({ maxEntries: 10_000, maxSize: 10_000, ttlMs: 10_000 }, usable),
    runs: createMemoCache<string>({ maxEntries: 10_000, maxSize: 32 * 1024 * 1024, ttlMs: 60_000 }, usable),
    webhooks: createMemoCache<boolean>({ maxEntries: 10_000, maxSize: 10_000, ttlMs: 60_000 }, usable),
    deployments: createMemoCache<GraphDeployment>({ maxEntries: 10_000, maxSize: 10_000, ttlMs: 60_000 }, usable),
  };
  const clearAll = () => {
    for (const cache of Object.values(caches)) cache.clear();
  };

  return {
    apiKeys: caches.api_keys as MemoCache<Principal>,
    runs: caches.runs as MemoCache<string>,
    webhookDeployments: caches.webhooks as MemoCache<boolean>,
    graphDeployments: caches.deployments as MemoCache<GraphDeployment>,
    async changing(name, change) {
      const result = await db.transaction().execute(async (trx) => {
        const value = await change(trx);
        if (options.backend === 'postgres') await sql`select pg_notify(${CACHE_CHANNEL}, ${name})`.execute(trx);
        return value;
      });
      caches[name].clear();
      return result;
    },
    heard(name) {
      if (isCacheName(name)) caches[name].clear();
    },
    // Notifications sent while the connection was down are lost: start afresh either way.
    connectionChanged: clearAll,
  };
}
