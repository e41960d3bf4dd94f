import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf } from '../auth/plugin.js';
import { commonErrors, conflictError } from '../http/error-schema.js';
import { idempotencyHeaders } from '../runs/schemas.js';
import {
  checkpointSchema,
  createdThreadRunSchema,
  createThreadBody,
  createThreadRunBody,
  historyQuery,
  listThreadsQuery,
  patchThreadBody,
  threadParams,
  threadSchema,
} from './schemas.js';
import type { ThreadService } from './service.js';

/** Threads: stateful conversations of one deployment. Any key of the organization. */
export const threadRoutes: FastifyPluginAsyncZod<{ threads: ThreadService }> = async (app, { threads }) => {
  const tags = ['threads'];

  app.post(
    '/threads',
    {
      schema: {
        tags,
        summary: 'Create a thread (status idle)',
        body: createThreadBody,
        response: { 200: threadSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { deployment_id, metadata, values } = request.body;
      return threads.create(principalOf(request).orgId, { deployment_id, metadata, values: values ?? null });
    },
  );

  app.get(
    '/threads',
    {
      schema: {
        tags,
        summary: 'List a deployment’s threads, newest first',
        querystring: listThreadsQuery,
        response: { 200: z.object({ threads: z.array(threadSchema) }), ...commonErrors },
      },
    },
    async (request) => {
      const { limit, offset, deployment_id, status } = request.query;
      return { threads: await threads.list(principalOf(request).orgId, { deployment_id, status }, { limit, offset }) };
    },
  );

  app.get(
    '/threads/:id',
    {
      schema: {
        tags,
        summary: 'Get a thread with its current values',
        params: threadParams,
        response: { 200: threadSchema, ...commonErrors },
      },
    },
    async (request) => threads.get(principalOf(request).orgId, request.params.id),
  );

  app.patch(
    '/threads/:id',
    {
      schema: {
        tags,
        summary: 'Replace a thread’s metadata and/or values',
        params: threadParams,
        body: patchThreadBody,
        response: { 200: threadSchema, ...commonErrors, ...conflictError },
      },
    },
    async (request) => threads.update(principalOf(request).orgId, request.params.id, request.body),
  );

  app.delete(
    '/threads/:id',
    {
      schema: {
        tags,
        summary: 'Delete a thread and its history (not while busy)',
        params: threadParams,
        response: { 200: z.object({ success: z.literal(true) }), ...commonErrors, ...conflictError },
      },
    },
    async (request) => {
      await threads.remove(principalOf(request).orgId, request.params.id);
      return { success: true as const };
    },
  );

  app.get(
    '/threads/:id/history',
    {
      schema: {
        tags,
        summary: 'A thread’s checkpoints, newest first',
        params: threadParams,
        querystring: historyQuery,
        response: { 200: z.object({ checkpoints: z.array(checkpointSchema) }), ...commonErrors },
      },
    },
    async (request) => ({
      checkpoints: await threads.history(principalOf(request).orgId, request.params.id, request.query),
    }),
  );

  app.post(
    '/threads/:id/runs',
    {
      schema: {
        tags,
        summary:
          'Start a run in a thread that is not busy (409 while it is busy); `command` resumes an interrupted one',
        params: threadParams,
        headers: idempotencyHeaders,
        body: createThreadRunBody.nullish(),
        response: { 202: createdThreadRunSchema, ...commonErrors, ...conflictError },
      },
    },
    async (request, reply) => {
      const body = request.body ?? { input: {}, environment: 'production' as const };
      const created = await threads.createRun(
        principalOf(request).orgId,
        request.params.id,
        body,
        request.headers['idempotency-key'] ?? null,
      );
      return reply.status(202).send(created);
    },
  );
};
