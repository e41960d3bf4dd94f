import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf } from '../auth/plugin.js';
import { notFound } from '../errors.js';
import type { LangGraphDeps } from './deps.js';
import { answerPage, pageAndOne } from './pagination.js';
import {
  checkpointSchema,
  errors,
  jsonObject,
  limitField,
  offsetField,
  optionalObject,
  threadSchema,
  threadStateSchema,
  threadStatus,
} from './schemas.js';
import { createStateUpdates } from './state-update.js';
import { createLangGraphThreads } from './threads.js';

const tags = ['langgraph'];
const threadParams = z.object({ thread_id: z.string() });

const searchBody = z.object({
  ids: z
    .array(z.string())
    .nullish()
    .transform((v) => v ?? undefined),
  metadata: optionalObject,
  values: optionalObject,
  status: threadStatus.nullish().transform((v) => v ?? undefined),
  limit: limitField(10),
  offset: offsetField,
  sort_by: z
    .enum(['thread_id', 'status', 'created_at', 'updated_at'])
    .nullish()
    .transform((v) => v ?? 'created_at'),
  sort_order: z
    .enum(['asc', 'desc'])
    .nullish()
    .transform((v) => v ?? 'desc'),
});

/** `before` as the SDKs send it: a checkpoint id, or a config or checkpoint naming one. */
const checkpointIdOf = (value: unknown): string | undefined => {
  if (typeof value === 'string') return value;
  const object = value as { checkpoint_id?: unknown; configurable?: { checkpoint_id?: unknown } } | null | undefined;
  const id = object?.checkpoint_id ?? object?.configurable?.checkpoint_id;
  return typeof id === 'string' ? id : undefined;
};

/** Paths the official server has that crewd does not serve (CONTRACTS §14 "Not served"). */
const NOT_SERVED: [string, string][] = [
  ['POST', '/threads/:thread_id/commands'],
  ['GET', '/threads/:thread_id/stream/events'],
  ['POST', '/threads/prune'],
];

/** Threads (CONTRACTS §14): crewd's threads with UUIDs, their state and history. */
export const threadRoutes: FastifyPluginAsyncZod<LangGraphDeps> = async (app, { db, services }) => {
  const threads = createLangGraphThreads(db, services.threads);
  const updateGraphState = createStateUpdates({ db, services });
  const org = (request: Parameters<typeof principalOf>[0]) => principalOf(request).orgId;

  app.post(
    '/threads',
    {
      schema: {
        tags,
        operationId: 'langgraphCreateThread',
        summary: 'Create a thread (client-chosen thread_id with if_exists raise or do_nothing)',
        body: z
          .object({
            thread_id: z
              .uuid({ message: 'must be a UUID' })
              .nullish()
              .transform((v) => v ?? undefined),
            metadata: optionalObject,
            if_exists: z
              .enum(['raise', 'do_nothing'])
              .nullish()
              .transform((v) => v ?? 'raise'),
          })
          .nullish()
          .transform((v) => v ?? { thread_id: undefined, metadata: undefined, if_exists: 'raise' as const }),
        response: { 200: threadSchema, ...errors },
      },
    },
    async (request) => threads.create(org(request), { ...request.body, metadata: request.body.metadata ?? {} }),
  );

  app.post(
    '/threads/search',
    {
      schema: {
        tags,
        operationId: 'langgraphSearchThreads',
        summary: 'Search threads',
        body: searchBody,
        response: { 200: z.array(threadSchema), ...errors },
      },
    },
    async (request, reply) => {
      const { limit, offset, sort_by, sort_order, ...filter } = request.body;
      const order = { by: sort_by, direction: sort_order };
      const rows = await threads.search(org(request), filter, order, pageAndOne({ limit, offset }));
      return answerPage(reply, rows, { limit, offset });
    },
  );

  app.post(
    '/threads/count',
    {
      schema: {
        tags,
        operationId: 'langgraphCountThreads',
        summary: 'Count threads',
        body: searchBody.pick({ metadata: true, values: true, status: true }),
        response: { 200: z.number().int(), ...errors },
      },
    },
    async (request) => threads.count(org(request), request.body),
  );

  for (const [method, url] of NOT_SERVED) {
    app.route({
      method: method as 'GET' | 'POST',
      url,
      schema: { hide: true },
      handler: async () => {
        throw notFound(
          `${url.replace(':thread_id', '{thread_id}')} is not served by crewd (CONTRACTS §14, "Not served")`,
        );
      },
    });
  }

  app.get(
    '/threads/:thread_id',
    {
      schema: {
        tags,
        operationId: 'langgraphGetThread',
        summary: 'Get a thread',
        params: threadParams,
        response: { 200: threadSchema, ...errors },
      },
    },
    async (request) => threads.get(org(request), request.params.thread_id),
  );

  app.patch(
    '/threads/:thread_id',
    {
      schema: {
        tags,
        operationId: 'langgraphUpdateThread',
        summary: "Merge metadata into a thread's",
        params: threadParams,
        body: z.object({ metadata: optionalObject }),
        response: { 200: threadSchema, ...errors },
      },
    },
    async (request) => threads.update(org(request), request.params.thread_id, request.body.metadata ?? {}),
  );

  app.delete(
    '/threads/:thread_id',
    {
      schema: {
        tags,
        operationId: 'langgraphDeleteThread',
        summary: 'Delete a thread, canceling its runs',
        params: threadParams,
        response: { 204: z.null(), ...errors },
      },
    },
    async (request, reply) => {
      const orgId = org(request);
      await threads.remove(orgId, request.params.thread_id, (runId) => services.runs.cancel(orgId, runId));
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/threads/:thread_id/copy',
    {
      schema: {
        tags,
        operationId: 'langgraphCopyThread',
        summary: 'Copy a thread with its state and checkpoints',
        params: threadParams,
        response: { 200: threadSchema, ...errors },
      },
    },
    async (request) => threads.copy(org(request), request.params.thread_id),
  );

  const stateQuery = z.object({ subgraphs: z.enum(['true', 'false']).optional() });

  app.get(
    '/threads/:thread_id/state',
    {
      schema: {
        tags,
        operationId: 'langgraphThreadState',
        summary: "A thread's current state",
        params: threadParams,
        querystring: stateQuery,
        response: { 200: threadStateSchema, ...errors },
      },
    },
    async (request) => threads.state(org(request), request.params.thread_id),
  );

  app.get(
    '/threads/:thread_id/state/:checkpoint_id',
    {
      schema: {
        tags,
        operationId: 'langgraphThreadStateAt',
        summary: "A thread's state at one checkpoint",
        params: threadParams.extend({ checkpoint_id: z.string() }),
        querystring: stateQuery,
        response: { 200: threadStateSchema, ...errors },
      },
    },
    async (request) => threads.state(org(request), request.params.thread_id, request.params.checkpoint_id),
  );

  app.post(
    '/threads/:thread_id/state/checkpoint',
    {
      schema: {
        tags,
        operationId: 'langgraphThreadStateAtCheckpoint',
        summary: "A thread's state at the checkpoint the body names",
        params: threadParams,
        body: z.object({ checkpoint: jsonObject, subgraphs: z.boolean().nullish() }),
        response: { 200: threadStateSchema, ...errors },
      },
    },
    async (request) => threads.state(org(request), request.params.thread_id, checkpointIdOf(request.body.checkpoint)),
  );

  app.post(
    '/threads/:thread_id/state',
    {
      schema: {
        tags,
        operationId: 'langgraphUpdateThreadState',
        summary: "Update a thread's state as the graph's update_state does (as_node), as a new checkpoint",
        params: threadParams,
        body: z.object({
          values: z.union([jsonObject, z.array(z.unknown())]).nullish(),
          as_node: z
            .string()
            .nullish()
            .transform((v) => v ?? undefined),
          checkpoint: jsonObject.nullish(),
          checkpoint_id: z.string().nullish(),
        }),
        response: {
          200: z.object({
            checkpoint: checkpointSchema,
            configurable: checkpointSchema.describe('the same, as the official server also sends it (deprecated)'),
            checkpoint_id: z.string().describe('the new checkpoint’s id (deprecated)'),
          }),
          ...errors,
        },
      },
    },
    async (request) => {
      const { values, as_node, checkpoint, checkpoint_id } = request.body;
      const update = { values, as_node, checkpoint_id: checkpoint_id ?? checkpointIdOf(checkpoint) };
      const { checkpoint: written } = await threads.updateState(
        org(request),
        request.params.thread_id,
        update,
        (thread, asked) => updateGraphState(principalOf(request), thread, asked),
      );
      return { checkpoint: written, configurable: written, checkpoint_id: written.checkpoint_id };
    },
  );

  app.get(
    '/threads/:thread_id/history',
    {
      schema: {
        tags,
        operationId: 'langgraphThreadHistory',
        summary: "A thread's past states, newest first",
        params: threadParams,
        querystring: z.object({
          limit: z.coerce.number().int().min(1).max(1000).default(10),
          before: z.string().optional(),
        }),
        response: { 200: z.array(threadStateSchema), ...errors },
      },
    },
    async (request) => threads.history(org(request), request.params.thread_id, request.query),
  );

  app.post(
    '/threads/:thread_id/history',
    {
      schema: {
        tags,
        operationId: 'langgraphSearchThreadHistory',
        summary: "A thread's past states, newest first",
        params: threadParams,
        body: z
          .object({
            limit: limitField(10),
            before: z.unknown().optional(),
            metadata: optionalObject,
            checkpoint: jsonObject.nullish(),
          })
          .nullish()
          .transform((v) => v ?? { limit: 10, before: undefined }),
        response: { 200: z.array(threadStateSchema), ...errors },
      },
    },
    async (request) =>
      threads.history(org(request), request.params.thread_id, {
        limit: request.body.limit,
        before: checkpointIdOf(request.body.before),
      }),
  );
};
