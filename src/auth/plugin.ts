import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Kysely } from 'kysely';
import type { MemoCache } from '../cache/memo-cache.js';
import type { Database, Role } from '../db/types.js';
import { AppError } from '../errors.js';
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

/** The route that starts runs from a token URL, without a key. */
const INCOMING_WEBHOOK_ROUTE = '/webhooks/runs/:token';

/**
 * Resolves `Authorization: Bearer <key>` to a principal for every route under /v1, and applies
 * the request limits (per key, and per address on failed keys and token URLs).
 */
const authPlugin: FastifyPluginAsync<{
  db: Kysely<Database>;
  keys: MemoCache<Principal>;
  limits: RateLimitSettings;
}> = async (app, { db, keys, limits }) => {
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
    if (request.routeOptions.url === INCOMING_WEBHOOK_ROUTE) return limiter.takeForIncomingWebhook(request, reply);
    if (!request.url.startsWith('/v1/') && request.url !== '/v1') return;
    const match = BEARER.exec(request.headers.authorization ?? '');
    const principal = match?.[1] ? await lookUp(match[1]) : null;
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
