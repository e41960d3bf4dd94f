import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

export interface RateLimitSettings {
  /** Requests one API key may make per minute; 0: no limit. */
  perKeyPerMinute: number;
  /** Requests with a missing or unknown key one address may make per minute; 0: no limit. */
  failedAuthPerMinute: number;
  /** Requests to incoming-webhook token URLs one address may make per minute; 0: no limit. */
  incomingWebhookPerMinute: number;
}

const MINUTE_MS = 60_000;

type Limiter = ReturnType<FastifyInstance['createRateLimit']>;

/** Answers 429 `rate_limited` with Retry-After, per CONTRACTS §2. */
function refuse(reply: FastifyReply, seconds: number, message: string): never {
  reply.header('retry-after', String(Math.max(1, seconds)));
  throw new AppError(429, 'rate_limited', message);
}

/**
 * The request limits, counted in memory by @fastify/rate-limit in one-minute windows on each
 * instance: per API key, and per client address for what needs no key (token URLs) or failed
 * to give a valid one. Keys carry 200+ random bits, so the address limit slows noise and probing;
 * it never refuses a valid key, since many clients may share an address (every crew's is loopback).
 */
export async function createRateLimits(app: FastifyInstance, settings: RateLimitSettings) {
  await app.register(rateLimit, { global: false });
  const limiter = (max: number, keyGenerator?: (request: FastifyRequest) => string): Limiter | null =>
    max > 0 ? app.createRateLimit({ max, timeWindow: MINUTE_MS, ...(keyGenerator ? { keyGenerator } : {}) }) : null;
  // Without a key generator the limiter counts by client address (IPv6 by /56 network).
  const perKey = limiter(settings.perKeyPerMinute, (request) => request.principal?.keyId ?? '');
  const failedAuth = limiter(settings.failedAuthPerMinute);
  const incomingWebhook = limiter(settings.incomingWebhookPerMinute);

  return {
    /** Counts a request of an authenticated key. */
    async takeForKey(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const state = await perKey?.(request);
      if (state && !state.isAllowed && state.isExceeded) {
        refuse(reply, state.ttlInSeconds, `Rate limit of ${settings.perKeyPerMinute} requests per minute exceeded`);
      }
    },

    /** Refuses an invalid key from an address that already sent too many this minute. */
    async checkFailedAuth(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const state = await failedAuth?.(request, { increment: false });
      if (state && !state.isAllowed && state.remaining === 0) {
        refuse(
          reply,
          state.ttlInSeconds,
          `Too many requests with an invalid API key from this address (limit ${settings.failedAuthPerMinute} per minute); try again later`,
        );
      }
    },

    async countFailedAuth(request: FastifyRequest): Promise<void> {
      await failedAuth?.(request);
    },

    /** Counts a request to an incoming-webhook token URL. */
    async takeForIncomingWebhook(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const state = await incomingWebhook?.(request);
      if (state && !state.isAllowed && state.isExceeded) {
        refuse(
          reply,
          state.ttlInSeconds,
          `Rate limit of ${settings.incomingWebhookPerMinute} requests per minute per address to incoming webhook URLs exceeded`,
        );
      }
    },
  };
}
