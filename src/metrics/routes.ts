import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { Metrics } from './registry.js';

/**
 * Request latency for every route, and `GET /metrics` in Prometheus text format unless it has a
 * port of its own (METRICS_PORT, metrics/listener.ts).
 */
const metricsPlugin: FastifyPluginAsync<{ metrics: Metrics; serveRoute: boolean }> = async (
  app,
  { metrics, serveRoute },
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
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
};

/** Not encapsulated, so the latency hook sees every route. */
export const metricsRoutes = fp(metricsPlugin, { name: 'metrics' });
