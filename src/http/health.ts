import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { type Kysely, sql } from 'kysely';
import { z } from 'zod';
import type { Database } from '../db/types.js';
import { errorBodySchema } from './error-schema.js';

/** Liveness and readiness; no key needed, so load balancers and Docker can call them. */
export const healthRoutes: FastifyPluginAsyncZod<{ db: Kysely<Database> }> = async (app, { db }) => {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['health'],
        operationId: 'getHealth',
        summary: 'Liveness',
        description: 'No key needed. Answers while the process is up.',
        response: { 200: z.object({ status: z.literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        operationId: 'getReadiness',
        summary: 'Readiness: the database answers',
        description: 'No key needed. 503 while the database cannot be reached.',
        response: { 200: z.object({ status: z.literal('ready') }), 503: errorBodySchema },
      },
    },
    async (_request, reply) => {
      try {
        await sql`select 1`.execute(db);
        return { status: 'ready' as const };
      } catch {
        return reply
          .status(503)
          .send({ error: { message: 'Service unavailable: the database cannot be reached', code: 'unavailable' } });
      }
    },
  );
};
