import { timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../errors.js';
import type { Metrics } from './registry.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

function isLoopback(address: string): boolean {
  const plain = address.replace(/^::ffff:/i, '');
  return (isIP(plain) === 4 && plain.startsWith('127.')) || plain === '::1';
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Who may scrape: with METRICS_TOKEN, whoever sends it as a bearer token; without it, loopback
 * clients only, so a service listening on 0.0.0.0 does not hand its figures to anyone who asks.
 */
function checkScraper(request: FastifyRequest, token: string | undefined): void {
  if (token !== undefined) {
    const given = BEARER.exec(request.headers.authorization ?? '')?.[1];
    if (given === undefined || !sameSecret(given, token)) {
      throw new AppError(401, 'unauthorized', 'GET /metrics requires the METRICS_TOKEN as a Bearer token');
    }
    return;
  }
  if (!isLoopback(request.ip)) {
    throw new AppError(403, 'forbidden', 'GET /metrics answers loopback clients only; set METRICS_TOKEN to scrape it');
  }
}

/**
 * Request latency for every route, and `GET /metrics` in Prometheus text format unless it has a
 * port of its own (METRICS_PORT, metrics/listener.ts).
 */
const metricsPlugin: FastifyPluginAsync<{ metrics: Metrics; serveRoute: boolean; token: string | undefined }> = async (
  app,
  { metrics, serveRoute, token },
) => {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unknown';
    if (route === '/metrics') return;
    metrics.httpRequestDuration.observe(
      { method: request.method, route, status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  if (!serveRoute) return;
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    checkScraper(request, token);
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
};

/** Not encapsulated, so the latency hook sees every route. */
export const metricsRoutes = fp(metricsPlugin, { name: 'metrics' });
