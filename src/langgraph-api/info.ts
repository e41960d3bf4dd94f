import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { LangGraphDeps } from './deps.js';

const infoSchema = z.object({
  version: z.string(),
  flags: z.object({ assistants: z.boolean(), crons: z.boolean(), langsmith: z.boolean() }),
  metadata: z.record(z.string(), z.unknown()),
});

/** `/ok` and `/info`, without a key (the official server's health and capability routes). */
export const infoRoutes: FastifyPluginAsyncZod<LangGraphDeps> = async (app) => {
  app.get(
    '/ok',
    {
      schema: {
        tags: ['langgraph'],
        operationId: 'langgraphOk',
        summary: 'LangGraph API liveness',
        response: { 200: z.object({ ok: z.literal(true) }) },
      },
    },
    async () => ({ ok: true as const }),
  );
  app.get(
    '/info',
    {
      schema: {
        tags: ['langgraph'],
        operationId: 'langgraphInfo',
        summary: 'What this LangGraph API serves',
        response: { 200: infoSchema },
      },
    },
    async () => ({
      version: '0.1.0',
      flags: { assistants: true, crons: true, langsmith: false },
      metadata: { server: 'crewd' },
    }),
  );
};
