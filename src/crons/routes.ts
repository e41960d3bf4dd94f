import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf } from '../auth/plugin.js';
import { commonErrors, limitError } from '../http/error-schema.js';
import { createCronBody, cronParams, cronSchema, listCronsQuery, updateCronBody } from './schemas.js';
import type { CronService } from './service.js';

const success = z.object({ success: z.literal(true) });

/** Crons: runs of a deployment on a schedule. Admin and member keys alike. */
export const cronRoutes: FastifyPluginAsyncZod<{ crons: CronService }> = async (app, { crons }) => {
  const tags = ['crons'];

  app.post(
    '/crons',
    {
      schema: {
        tags,
        operationId: 'createCron',
        summary: 'Create a cron: a run of the deployment at each time of the schedule',
        description:
          'Admin and member keys. `schedule`: 5 cron fields, or 6 with seconds first, read in `timezone` (IANA, default UTC). ' +
          'Each due time starts exactly one run across all instances. 422 when the schedule falls due more often than ' +
          'CRON_MIN_INTERVAL_SECONDS allows, or the organization has MAX_CRONS_PER_ORGANIZATION crons.',
        body: createCronBody,
        response: { 201: cronSchema, ...commonErrors, ...limitError },
      },
    },
    async (request, reply) => reply.status(201).send(await crons.create(principalOf(request).orgId, request.body)),
  );

  app.get(
    '/crons',
    {
      schema: {
        tags,
        operationId: 'listCrons',
        summary: 'List crons, newest first',
        description: 'Filtered by `deployment_id` when given; `limit` (default 50, at most 1000) and `offset` page it.',
        querystring: listCronsQuery,
        response: { 200: z.object({ crons: z.array(cronSchema) }), ...commonErrors },
      },
    },
    async (request) => ({ crons: await crons.list(principalOf(request).orgId, request.query) }),
  );

  app.get(
    '/crons/:id',
    {
      schema: {
        tags,
        operationId: 'getCron',
        summary: 'Get a cron',
        description: 'With `next_run_at`, the last run (`last_run_at`, `last_run_id`) and `last_error`.',
        params: cronParams,
        response: { 200: cronSchema, ...commonErrors },
      },
    },
    async (request) => crons.get(principalOf(request).orgId, request.params.id),
  );

  app.patch(
    '/crons/:id',
    {
      schema: {
        tags,
        operationId: 'updateCron',
        summary: 'Change a cron (any field but deployment_id)',
        description:
          'A new schedule or timezone, or enabling the cron, counts the next run from now. 422 when the new schedule ' +
          'falls due more often than CRON_MIN_INTERVAL_SECONDS allows.',
        params: cronParams,
        body: updateCronBody,
        response: { 200: cronSchema, ...commonErrors, ...limitError },
      },
    },
    async (request) => crons.update(principalOf(request).orgId, request.params.id, request.body),
  );

  app.delete(
    '/crons/:id',
    {
      schema: {
        tags,
        operationId: 'deleteCron',
        summary: 'Delete a cron; its runs stay, still with its cron_id',
        description: 'No more runs start from it; runs it started are kept.',
        params: cronParams,
        response: { 200: success, ...commonErrors },
      },
    },
    async (request) => {
      await crons.remove(principalOf(request).orgId, request.params.id);
      return { success: true as const };
    },
  );
};
