import http from 'node:http';
import type { Metrics } from './registry.js';

/**
 * `GET /metrics` on a port of its own (METRICS_PORT), so that publishing the API port does not
 * publish the metrics: a scraper reaches this one on the internal network only.
 */
export function createMetricsListener(metrics: Metrics, options: { port: number; host: string }) {
  const server = http.createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: 'Only GET /metrics is served here', code: 'not_found' } }));
      return;
    }
    metrics.registry.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': metrics.registry.contentType });
        response.end(text);
      },
      () => {
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: 'Metrics could not be collected', code: 'internal' } }));
      },
    );
  });
  return {
    server,
    start: () =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.port, options.host, () => {
          server.off('error', reject);
          resolve();
        });
      }),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
