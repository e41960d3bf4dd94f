import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { Metrics } from './registry.js';

/** `GET /metrics` in Prometheus text format, and request latency for every route. */
const metricsPlugin: FastifyPluginAsync<{ metrics: Metrics }> = async (app, { metrics }) => {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unknown';
    if (route === '/metrics') return;
    metrics.httpRequestDuration.observe(
      { method: request.method, route, status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
};

/** Not encapsulated, so the latency hook sees every route. */
export const metricsRoutes = fp(metricsPlugin, { name: 'metrics' });
