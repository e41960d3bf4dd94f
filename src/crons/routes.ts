import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf } from '../auth/plugin.js';
import { commonErrors } from '../http/error-schema.js';
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
        summary: 'Create a cron: a run of the deployment at each time of the schedule',
        body: createCronBody,
        response: { 201: cronSchema, ...commonErrors },
      },
    },
    async (request, reply) => reply.status(201).send(await crons.create(principalOf(request).orgId, request.body)),
  );

  app.get(
    '/crons',
    {
      schema: {
        tags,
        summary: 'List crons, newest first',
        querystring: listCronsQuery,
        response: { 200: z.object({ crons: z.array(cronSchema) }), ...commonErrors },
      },
    },
    async (request) => ({ crons: await crons.list(principalOf(request).orgId, request.query) }),
  );

  app.get(
    '/crons/:id',
    {
      schema: { tags, summary: 'Get a cron', params: cronParams, response: { 200: cronSchema, ...commonErrors } },
    },
    async (request) => crons.get(principalOf(request).orgId, request.params.id),
  );

  app.patch(
    '/crons/:id',
    {
      schema: {
        tags,
        summary: 'Change a cron (any field but deployment_id)',
        description: 'A new schedule or timezone, or enabling the cron, counts the next run from now.',
        params: cronParams,
        body: updateCronBody,
        response: { 200: cronSchema, ...commonErrors },
      },
    },
    async (request) => crons.update(principalOf(request).orgId, request.params.id, request.body),
  );

  app.delete(
    '/crons/:id',
    {
      schema: {
        tags,
        summary: 'Delete a cron; its runs stay, still with its cron_id',
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
