import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';

/** console/dist from src/http (tsx) or dist/src/http (compiled): the first of the two that exists. */
function consoleDist(): string | null {
  for (const relative of ['../../console/dist/', '../../../console/dist/']) {
    const folder = fileURLToPath(new URL(relative, import.meta.url));
    if (existsSync(`${folder}index.html`)) return folder;
  }
  return null;
}

/** The web console (built by `npm install` into console/dist) at /console/; `/` redirects there. */
export const consoleRoutes: FastifyPluginAsync = async (app) => {
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/console/'));
  const root = consoleDist();
  if (!root) {
    for (const url of ['/console', '/console/*']) {
      app.get(url, { schema: { hide: true } }, async (_request, reply) =>
        reply
          .status(503)
          .type('text/plain')
          .send('The console is not built: run `npm run build:console` (npm install does it).'),
      );
    }
    return;
  }
  await app.register(fastifyStatic, {
    root,
    prefix: '/console/',
    index: false,
    wildcard: true,
    setHeaders(reply, path) {
      // Asset names carry a content hash; the page itself must be fetched fresh to pick up a new build.
      const immutable = path.includes('/assets/');
      reply.header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
  // The router ignores trailing slashes, so /console/ arrives as /console: the page itself has its own route.
  app.get('/console', { schema: { hide: true } }, async (_request, reply) =>
    reply.header('cache-control', 'no-cache').sendFile('index.html'),
  );
};
