import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Kysely } from 'kysely';
import type { MemoCache } from '../cache/memo-cache.js';
import type { Database, Role } from '../db/types.js';
import { AppError } from '../errors.js';
import { hashSecret } from './keys.js';
import { createRateLimiter } from './rate-limit.js';

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

/** Resolves `Authorization: Bearer <key>` to a principal for every route under /v1. */
const authPlugin: FastifyPluginAsync<{
  db: Kysely<Database>;
  keys: MemoCache<Principal>;
  rateLimitPerMinute: number;
}> = async (app, { db, keys, rateLimitPerMinute }) => {
  const limiter = rateLimitPerMinute > 0 ? createRateLimiter(rateLimitPerMinute) : null;

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
    if (!request.url.startsWith('/v1/') && request.url !== '/v1') return;
    const match = BEARER.exec(request.headers.authorization ?? '');
    if (!match?.[1]) throw unauthorized();
    const principal = await lookUp(match[1]);
    if (!principal) throw unauthorized();
    request.principal = principal;
    const waitSeconds = limiter?.take(principal.keyId) ?? 0;
    if (waitSeconds > 0) {
      reply.header('retry-after', String(waitSeconds));
      throw new AppError(429, 'rate_limited', `Rate limit of ${rateLimitPerMinute} requests per minute exceeded`);
    }
  });
};

export default fp(authPlugin, { name: 'auth' });
