import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Kysely } from 'kysely';
import type { Database, Role } from '../db/types.js';
import { AppError } from '../errors.js';
import type { MemoCache } from '../memo-cache.js';
import { hashSecret } from './keys.js';
import { createRateLimits, type RateLimitSettings } from './rate-limit.js';

export interface Principal {
  orgId: string;
  keyId: string;
  keyName: string;
  role: Role;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

const unauthorized = () => new AppError(401, 'unauthorized', 'Invalid API key');

/** The authenticated caller; only call it on routes behind the auth hook. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized();
  return request.principal;
}

/** The `api:<key name>` form rows and runs record as their author. */
export function actorOf(request: FastifyRequest): string {
  return `api:${principalOf(request).keyName}`;
}

export function requireAdmin(request: FastifyRequest, need: string): Principal {
  const principal = principalOf(request);
  if (principal.role !== 'admin') throw new AppError(403, 'forbidden', `${need} requires an admin API key`);
  return principal;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** Paths of the LangGraph API that answer without a key, as the official server's do. */
const LANGGRAPH_PUBLIC = new Set(['/ok', '/info']);

/** Whether `url` (path and query) is `prefix` or under it. */
function under(url: string, prefix: string): boolean {
  return url === prefix || url.startsWith(`${prefix}/`) || url.startsWith(`${prefix}?`);
}

/** The key of a request: the bearer header, or (on the LangGraph API, as its SDKs send it) `x-api-key`. */
function keyOf(request: FastifyRequest, allowApiKeyHeader: boolean): string | undefined {
  const bearer = BEARER.exec(request.headers.authorization ?? '')?.[1];
  if (bearer || !allowApiKeyHeader) return bearer;
  const header = request.headers['x-api-key'];
  return typeof header === 'string' && header.trim() !== '' ? header.trim() : undefined;
}

/** The route that starts runs from a token URL, without a key. */
const INCOMING_WEBHOOK_ROUTE = '/webhooks/runs/:token';

/**
 * Resolves `Authorization: Bearer <key>` to a principal for every route under /v1 and /mcp (and under the
 * LangGraph API's prefix, where `x-api-key` is taken too: CONTRACTS §14), and applies
 * the request limits (per key, and per address on failed keys and token URLs).
 */
const authPlugin: FastifyPluginAsync<{
  db: Kysely<Database>;
  keys: MemoCache<Principal>;
  limits: RateLimitSettings;
  /** The LangGraph API's prefix; undefined when it is not served. */
  langgraphPrefix?: string | undefined;
}> = async (app, { db, keys, limits, langgraphPrefix }) => {
  const limiter = await createRateLimits(app, limits);

  async function lookUp(secret: string): Promise<Principal | null> {
    const hash = hashSecret(secret);
    const cached = keys.get(hash);
    if (cached) return cached;
    const generation = keys.generation;
    const row = await db
      .selectFrom('api_keys')
      .select(['id', 'name', 'role', 'org_id'])
      .where('key_hash', '=', hash)
      .executeTakeFirst();
    if (!row) return null;
    const principal = { orgId: row.org_id, keyId: row.id, keyName: row.name, role: row.role };
    keys.set(hash, principal, generation);
    return principal;
  }

  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request, reply) => {
    const route = request.routeOptions.url;
    if (route === INCOMING_WEBHOOK_ROUTE) return limiter.takeForIncomingWebhook(request, reply);
    // The route the router matched (it undoes percent-encoding: `/%761/runs` is `/v1/runs`), else the path as sent.
    const target = route ?? request.url.split('?')[0] ?? '';
    const langgraph = langgraphPrefix !== undefined && under(target, langgraphPrefix);
    if (langgraph) {
      if (LANGGRAPH_PUBLIC.has(target.slice(langgraphPrefix.length))) return;
    } else if (!target.startsWith('/v1/') && target !== '/v1' && !under(target, '/mcp')) return;
    // A browser's CORS preflight never carries the key (src/mcp/routes.ts answers it).
    if (request.method === 'OPTIONS' && target === '/mcp') return;
    const key = keyOf(request, langgraph);
    const principal = key ? await lookUp(key) : null;
    if (!principal) {
      // A valid key is never refused for the failures of others at the same address (crews share loopback).
      await limiter.checkFailedAuth(request, reply);
      await limiter.countFailedAuth(request);
      throw unauthorized();
    }
    request.principal = principal;
    await limiter.takeForKey(request, reply);
  });
};

export default fp(authPlugin, { name: 'auth' });
