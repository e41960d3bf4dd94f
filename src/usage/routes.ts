import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { principalOf } from '../auth/plugin.js';
import { commonErrors } from '../http/error-schema.js';
import { usageQuery, usageResponse } from './schemas.js';
import type { UsageService } from './service.js';

/** What the organization's runs used: tokens, calls and cost. Any key of the organization. */
export const usageRoutes: FastifyPluginAsyncZod<{ usage: UsageService }> = async (app, { usage }) => {
  app.get(
    '/usage',
    {
      schema: {
        tags: ['usage'],
        operationId: 'getUsage',
        summary: 'Tokens, calls and cost of the organization’s runs, summed by day, deployment or model',
        description:
          'Runs created in [`from`, `to`) (default: the last 30 days), of one deployment when `deployment_id` is given. ' +
          '`cost` is in USD over the models with a price (built-in or MODEL_PRICES_FILE); runs without LLM calls are left out.',
        querystring: usageQuery,
        response: { 200: usageResponse, ...commonErrors },
      },
    },
    async (request) => usage.summary(principalOf(request).orgId, request.query),
  );
};
