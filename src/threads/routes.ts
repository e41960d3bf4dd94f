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
        operationId: 'createThread',
        summary: 'Create a thread (status idle)',
        description: 'A thread keeps values between the runs started in it.',
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
        operationId: 'listThreads',
        summary: 'List a deployment’s threads, newest first',
        description: 'Requires `deployment_id`.',
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
        operationId: 'getThread',
        summary: 'Get a thread with its current values',
        description: '`status` is idle, busy, interrupted or error.',
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
        operationId: 'updateThread',
        summary: 'Replace a thread’s metadata and/or values',
        description: '409 while a run is going in the thread.',
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
        operationId: 'deleteThread',
        summary: 'Delete a thread and its history (not while busy)',
        description: '409 while a run is going in the thread.',
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
        operationId: 'listThreadHistory',
        summary: 'A thread’s checkpoints, newest first',
        description: 'One checkpoint per finished run that changed the values.',
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
        operationId: 'createThreadRun',
        summary:
          'Start a run in a thread that is not busy (409 while it is busy); `command` resumes an interrupted one',
        description:
          'Answers 202 once the runner process has started (or the run is queued); the run sees the thread’s values, ' +
          'its last checkpoint and the `command` on standard input. `multitask_strategy` says what to do when the thread is busy.',
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
        request.headers.traceparent ?? null,
      );
      return reply.status(202).send(created);
    },
  );
};
