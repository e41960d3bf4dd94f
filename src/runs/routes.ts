import { fastifySSE } from '@fastify/sse';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf } from '../auth/plugin.js';
import { commonErrors, conflictError } from '../http/error-schema.js';
import { sendJsonText } from '../http/json-text.js';
import { resumePoint, serveStream } from '../streams/serve-stream.js';
import type { RunStreams } from '../streams/streams.js';
import {
  cancelResponse,
  createdRunSchema,
  createRunBody,
  eventsQuery,
  idempotencyHeaders,
  listedRunSchema,
  listRunsQuery,
  runParams,
  runSchema,
} from './schemas.js';
import type { RunService } from './service.js';

/** Runs: create (202), read, list, cancel, and the live event stream. Any key of the organization. */
export const runRoutes: FastifyPluginAsyncZod<{ runs: RunService; streams: RunStreams }> = async (
  app,
  { runs, streams },
) => {
  const tags = ['runs'];
  await app.register(fastifySSE, { heartbeatInterval: 0 });

  app.post(
    '/runs',
    {
      schema: {
        tags,
        operationId: 'createRun',
        summary: 'Start a run of a deployment’s running version',
        description:
          'Answers once the run’s process has started (`running`), or with `pending` while MAX_CONCURRENT_RUNS runs are going.',
        headers: idempotencyHeaders,
        body: createRunBody,
        response: { 202: createdRunSchema, ...commonErrors, ...conflictError },
      },
    },
    async (request, reply) => {
      const { orgId } = principalOf(request);
      const { deployment_id, input, environment, thread_id } = request.body;
      const created = await runs.createRun({
        orgId,
        deploymentId: deployment_id,
        environment,
        input,
        threadId: thread_id ?? null,
        idempotencyKey: request.headers['idempotency-key'] ?? null,
        traceparent: request.headers.traceparent ?? null,
        idempotencyScope: 'runs',
      });
      return reply.status(202).send(created);
    },
  );

  app.get(
    '/runs',
    {
      schema: {
        tags,
        operationId: 'listRuns',
        summary: 'List runs, newest first',
        description: 'Filters by deployment, thread and status; `total` counts every match. `limit` at most 1000.',
        querystring: listRunsQuery,
        response: { 200: z.object({ runs: z.array(listedRunSchema), total: z.number().int() }), ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = principalOf(request);
      const { limit, offset, fields, ...filter } = request.query;
      return runs.list(orgId, filter, { limit, offset }, fields);
    },
  );

  app.get(
    '/runs/:id',
    {
      schema: {
        tags,
        operationId: 'getRun',
        summary: 'Get a run',
        description: 'Any key of the organization; another organization’s run is 404.',
        params: runParams,
        response: { 200: runSchema, ...commonErrors },
      },
    },
    async (request, reply) => sendJsonText(reply, await runs.getJson(principalOf(request).orgId, request.params.id)),
  );

  app.post(
    '/runs/:id/cancel',
    {
      schema: {
        tags,
        operationId: 'cancelRun',
        summary: 'Cancel a pending or running run; its process group is stopped',
        description:
          'A terminal run answers 400 `Cannot cancel run with status: <status>`. The run is `canceled` at once.',
        params: runParams,
        response: { 200: cancelResponse, ...commonErrors },
      },
    },
    async (request) => runs.cancel(principalOf(request).orgId, request.params.id),
  );

  app.get(
    '/runs/:id/events',
    {
      // 'manual': the route only ever streams, so no Accept negotiation (and no 406 outside our error format).
      sse: { kind: 'manual', heartbeat: false },
      schema: {
        tags,
        operationId: 'streamRunEvents',
        summary: 'Follow a run’s events (Server-Sent Events)',
        description:
          'Each event is `id: <seq>` and `data: {"type", "data"}`; `: keepalive` every 15 s; ends with one ' +
          '`{"type":"complete","status","output","error"}`. Resume with `Last-Event-ID` or `last_event_id`.',
        params: runParams,
        querystring: eventsQuery,
        response: {
          200: z.string().describe('text/event-stream'),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const resume = resumePoint(request.headers['last-event-id'], request.query.last_event_id);
      await serveStream(reply, streams.open(principalOf(request), request.params.id, resume));
    },
  );
};
