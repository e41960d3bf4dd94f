import { fastifySSE } from '@fastify/sse';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf } from '../auth/plugin.js';
import { hasStatus } from '../errors.js';
import { resumePoint, serveStream } from '../streams/serve-stream.js';
import type { LangGraphDeps } from './deps.js';
import {
  batchBody,
  cancelManyBody,
  cancelQuery,
  joinQuery,
  joinStreamQuery,
  listRunsQuery,
  type RunCreateBody,
  runCreateBody,
  runParams,
  runSchema,
  threadParams,
  threadRunParams,
} from './runs-schemas.js';
import { createLangGraphRuns } from './runs-service.js';
import { errors, jsonObject } from './schemas.js';
import { agentServerFraming } from './stream-framing.js';
import { isStateless } from './translate.js';

const tags = ['langgraph'];
const sse = { kind: 'manual', heartbeat: false } as const;
const streamResponse = { 200: z.string().describe('text/event-stream'), ...errors };
const noContent = { 202: z.null().describe('accepted'), 204: z.null().describe('done'), ...errors };

const modesOf = (value: string | string[] | undefined) =>
  value === undefined ? null : Array.isArray(value) ? value : [value];

/**
 * Runs of the Agent Server API (CONTRACTS §14), on a thread and stateless: create, stream, wait,
 * batch, get, list, cancel, join, rejoin a stream, delete. One run service and one event log with
 * /v1; only the framing of the stream differs.
 */
export const runRoutes: FastifyPluginAsyncZod<LangGraphDeps> = async (app, deps) => {
  const { basePath, services } = deps;
  const runs = createLangGraphRuns(deps);
  await app.register(fastifySSE, { heartbeatInterval: 0 });

  /**
   * `Content-Location` names the run under the prefix (CONTRACTS §14); `Location` where a client
   * picks the answer up again: a stream's `…/stream`, a `wait` or `join` its `…/join`, as the
   * official server sends them. `Location` is relative to the API's URL, not the host: the JS SDK
   * fetches `apiUrl + Location` and the Python SDK joins it to its base URL, so a prefixed path
   * would name `/langgraph/langgraph/…` (docs/langgraph.md, "Runs and streams").
   */
  function locate(
    reply: FastifyReply,
    run: { run_id: string; thread_id: string | null },
    rejoin: 'stream' | 'join' | null,
  ) {
    const inThread = `/threads/${run.thread_id}/runs/${run.run_id}`;
    const path = isStateless(run) ? `/runs/${run.run_id}` : inThread;
    reply.header('Content-Location', `${basePath}${path}`);
    // `join` is served under a thread only: a stateless run's is under the thread id it answers.
    if (rejoin) reply.header('Location', rejoin === 'join' ? `${inThread}/join` : `${path}/stream`);
  }

  /** Cancels the run when the client leaves before its end (`on_disconnect: cancel`, `cancel_on_disconnect`). */
  function cancelOnDisconnect(request: FastifyRequest, reply: FastifyReply, threadId: string | null, runId: string) {
    const { orgId } = principalOf(request);
    reply.raw.on('close', () => {
      if (reply.raw.writableFinished) return;
      runs.cancel(orgId, threadId, runId, 'interrupt').catch(() => {
        // Over meanwhile: nothing to cancel.
      });
    });
  }

  async function streamNew(request: FastifyRequest, reply: FastifyReply, threadId: string | null, body: RunCreateBody) {
    const principal = principalOf(request);
    const run = await runs.create(principal.orgId, threadId, body);
    locate(reply, run, 'stream');
    if (body.on_disconnect === 'cancel') cancelOnDisconnect(request, reply, run.thread_id, run.run_id);
    const modes = (run.kwargs.stream_mode as string[] | undefined) ?? null;
    await serveStream(
      reply,
      services.streams.open(principal, run.run_id, 0),
      agentServerFraming(run.run_id, modes, false),
    );
  }

  async function waitNew(request: FastifyRequest, reply: FastifyReply, threadId: string | null, body: RunCreateBody) {
    const principal = principalOf(request);
    const run = await runs.create(principal.orgId, threadId, body);
    locate(reply, run, 'join');
    if (body.on_disconnect === 'cancel') cancelOnDisconnect(request, reply, run.thread_id, run.run_id);
    return runs.finalValues(principal.orgId, run, await runs.untilEnd(principal, run.run_id));
  }

  async function joinStream(
    request: FastifyRequest<{ Querystring: z.infer<typeof joinStreamQuery> }>,
    reply: FastifyReply,
    threadId: string | null,
    runId: string,
  ) {
    const principal = principalOf(request);
    const run = await runs.get(principal.orgId, threadId, runId);
    // The SDKs rejoin from the first event with `Last-Event-ID: -1` (useStream's reconnectOnMount).
    const header = request.headers['last-event-id'];
    const resume = resumePoint(header === '-1' ? undefined : header, request.query.last_event_id);
    locate(reply, run, 'stream');
    if (request.query.cancel_on_disconnect) cancelOnDisconnect(request, reply, threadId, run.run_id);
    const modes = modesOf(request.query.stream_mode) ?? (run.kwargs.stream_mode as string[] | undefined) ?? null;
    // Rejoining a finished run sends its events, then `end` (CONTRACTS §14): the stream starts from the first event.
    await serveStream(
      reply,
      services.streams.open(principal, run.run_id, resume ?? 0),
      agentServerFraming(run.run_id, modes, resume !== null),
    );
  }

  // Runs on a thread.

  app.post(
    '/threads/:thread_id/runs',
    {
      schema: {
        tags,
        operationId: 'langgraphCreateThreadRun',
        summary: 'Start a run on a thread (background)',
        params: threadParams,
        body: runCreateBody,
        response: { 200: runSchema, ...errors },
      },
    },
    async (request, reply) => {
      const run = await runs.create(principalOf(request).orgId, request.params.thread_id, request.body);
      locate(reply, run, null);
      return run;
    },
  );

  app.post(
    '/threads/:thread_id/runs/stream',
    {
      sse,
      schema: {
        tags,
        operationId: 'langgraphStreamThreadRun',
        summary: 'Start a run on a thread and stream it',
        params: threadParams,
        body: runCreateBody,
        response: streamResponse,
      },
    },
    async (request, reply) => streamNew(request, reply, request.params.thread_id, request.body),
  );

  app.post(
    '/threads/:thread_id/runs/wait',
    {
      schema: {
        tags,
        operationId: 'langgraphWaitThreadRun',
        summary: 'Start a run on a thread and answer its final values',
        params: threadParams,
        body: runCreateBody,
        response: { 200: jsonObject, ...errors },
      },
    },
    async (request, reply) => waitNew(request, reply, request.params.thread_id, request.body),
  );

  app.get(
    '/threads/:thread_id/runs',
    {
      schema: {
        tags,
        operationId: 'langgraphListThreadRuns',
        summary: 'A thread’s runs, newest first',
        params: threadParams,
        querystring: listRunsQuery,
        response: { 200: z.array(runSchema), ...errors },
      },
    },
    async (request) => {
      const { limit, offset, status } = request.query;
      return runs.list(principalOf(request).orgId, request.params.thread_id, { limit, offset, status });
    },
  );

  app.get(
    '/threads/:thread_id/runs/:run_id',
    {
      schema: {
        tags,
        operationId: 'langgraphGetThreadRun',
        summary: 'Get a run',
        params: threadRunParams,
        response: { 200: runSchema, ...errors },
      },
    },
    async (request) => runs.get(principalOf(request).orgId, request.params.thread_id, request.params.run_id),
  );

  app.post(
    '/threads/:thread_id/runs/:run_id/cancel',
    {
      schema: {
        tags,
        operationId: 'langgraphCancelThreadRun',
        summary: 'Cancel a run (`action=rollback` deletes it too)',
        description:
          'The run is canceled when this answers: 202 without a body, or with `wait=true` 200 and `{}`, as the ' +
          'official server answers once the run it canceled is over.',
        params: threadRunParams,
        querystring: cancelQuery,
        response: { 200: z.object({}).strict().describe('canceled (wait=true)'), ...noContent },
      },
    },
    async (request, reply) => {
      const { thread_id, run_id } = request.params;
      await runs.cancel(principalOf(request).orgId, thread_id, run_id, request.query.action);
      return request.query.wait ? reply.status(200).send({}) : reply.status(202).send(null);
    },
  );

  app.get(
    '/threads/:thread_id/runs/:run_id/join',
    {
      schema: {
        tags,
        operationId: 'langgraphJoinThreadRun',
        summary: 'Wait for a run’s end; answers the thread’s values',
        params: threadRunParams,
        querystring: joinQuery,
        response: { 200: jsonObject, ...errors },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const run = await runs.get(principal.orgId, request.params.thread_id, request.params.run_id);
      locate(reply, run, 'join');
      if (request.query.cancel_on_disconnect) cancelOnDisconnect(request, reply, run.thread_id, run.run_id);
      return runs.finalValues(principal.orgId, run, await runs.untilEnd(principal, run.run_id));
    },
  );

  app.get(
    '/threads/:thread_id/runs/:run_id/stream',
    {
      sse,
      schema: {
        tags,
        operationId: 'langgraphJoinThreadRunStream',
        summary: 'Rejoin a run’s stream (`Last-Event-ID` resumes)',
        params: threadRunParams,
        querystring: joinStreamQuery,
        response: streamResponse,
      },
    },
    async (request, reply) => joinStream(request, reply, request.params.thread_id, request.params.run_id),
  );

  app.delete(
    '/threads/:thread_id/runs/:run_id',
    {
      schema: {
        tags,
        operationId: 'langgraphDeleteThreadRun',
        summary: 'Delete a finished run',
        params: threadRunParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      await runs.remove(principalOf(request).orgId, request.params.thread_id, request.params.run_id);
      return reply.status(204).send(null);
    },
  );

  // Stateless runs: no thread (the `thread_id` they answer is statelessThreadId's); `on_completion`
  // has nothing to delete or keep.

  app.post(
    '/runs',
    {
      schema: {
        tags,
        operationId: 'langgraphCreateRun',
        summary: 'Start a stateless run (background)',
        body: runCreateBody,
        response: { 200: runSchema, ...errors },
      },
    },
    async (request, reply) => {
      const run = await runs.create(principalOf(request).orgId, null, request.body);
      locate(reply, run, null);
      return run;
    },
  );

  app.post(
    '/runs/stream',
    {
      sse,
      schema: {
        tags,
        operationId: 'langgraphStreamRun',
        summary: 'Start a stateless run and stream it',
        body: runCreateBody,
        response: streamResponse,
      },
    },
    async (request, reply) => streamNew(request, reply, null, request.body),
  );

  app.post(
    '/runs/wait',
    {
      schema: {
        tags,
        operationId: 'langgraphWaitRun',
        summary: 'Start a stateless run and answer its output',
        body: runCreateBody,
        response: { 200: jsonObject, ...errors },
      },
    },
    async (request, reply) => waitNew(request, reply, null, request.body),
  );

  app.post(
    '/runs/batch',
    {
      schema: {
        tags,
        operationId: 'langgraphCreateRunBatch',
        summary: 'Start stateless runs (background)',
        body: batchBody,
        response: { 200: z.array(runSchema), ...errors },
      },
    },
    async (request) => {
      const { orgId } = principalOf(request);
      const created = [];
      // One after another, so that a refused run names its place and the ones before it stand.
      for (const body of request.body) created.push(await runs.create(orgId, null, body));
      return created;
    },
  );

  app.post(
    '/runs/cancel',
    {
      schema: {
        tags,
        operationId: 'langgraphCancelRuns',
        summary: 'Cancel runs by id, or a thread’s pending and running runs',
        querystring: cancelQuery.pick({ action: true }),
        body: cancelManyBody,
        response: noContent,
      },
    },
    async (request, reply) => {
      const { orgId } = principalOf(request);
      const { thread_id, run_ids, status } = request.body;
      const ids =
        run_ids ??
        (thread_id
          ? (await runs.list(orgId, thread_id, { limit: 1000, offset: 0 }))
              .filter((run) =>
                status && status !== 'all'
                  ? run.status === status
                  : run.status === 'pending' || run.status === 'running',
              )
              .map((run) => run.run_id)
          : []);
      for (const id of ids) {
        await runs.cancelGoing(orgId, thread_id ?? null, id, request.query.action).catch((error: unknown) => {
          // A run over meanwhile is no reason to leave the others going.
          if (!hasStatus(error, 409)) throw error;
        });
      }
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/runs/:run_id/stream',
    {
      sse,
      schema: {
        tags,
        operationId: 'langgraphJoinRunStream',
        summary: 'Rejoin a stateless run’s stream',
        params: runParams,
        querystring: joinStreamQuery,
        response: streamResponse,
      },
    },
    async (request, reply) => joinStream(request, reply, null, request.params.run_id),
  );
};
