import { fastifySSE } from '@fastify/sse';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAdmin } from '../auth/plugin.js';
import { versionParams } from '../deployments/schemas.js';
import type { DeploymentService } from '../deployments/service.js';
import { commonErrors } from '../http/error-schema.js';
import { eventsQuery } from '../runs/schemas.js';
import { resumePoint, serveStream } from '../streams/serve-stream.js';
import type { RunStreams } from '../streams/streams.js';
import type { BuildService } from './service.js';

const NEED = 'Managing deployments';

/** A version's build log (the run event stream over the version's log) and its uploaded bundle. */
export const buildRoutes: FastifyPluginAsyncZod<{
  builds: BuildService;
  deployments: DeploymentService;
  streams: RunStreams;
}> = async (app, { builds, deployments, streams }) => {
  const tags = ['deployments'];
  await app.register(fastifySSE, { heartbeatInterval: 0 });

  app.get(
    '/deployments/:id/versions/:version_id/build/events',
    {
      sse: { kind: 'manual', heartbeat: false },
      schema: {
        tags,
        operationId: 'streamBuildEvents',
        summary: 'Follow a version’s build log (Server-Sent Events)',
        description:
          'Each output line is `id: <seq>` and `data: {"type":"build.log","data":{"message","stream"}}`; ends with ' +
          '`{"type":"complete","status":"ready"|"failed","error"}`, at once for a finished build. Resume with `Last-Event-ID`.',
        params: versionParams,
        querystring: eventsQuery,
        response: { 200: z.string().describe('text/event-stream'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const principal = requireAdmin(request, NEED);
      const { id, version_id } = request.params;
      await deployments.getVersion(principal.orgId, id, version_id);
      const resume = resumePoint(request.headers['last-event-id'], request.query.last_event_id);
      await serveStream(reply, streams.open(principal, version_id, resume, builds.streamSubject));
    },
  );

  app.get(
    '/deployments/:id/versions/:version_id/bundle',
    {
      schema: {
        tags,
        operationId: 'downloadBundle',
        summary: 'Download the bundle a version was made from',
        description:
          'Admin keys only. The uploaded bytes as they came (`application/gzip`); 404 for a command version.',
        params: versionParams,
        response: { 200: z.any().describe('application/gzip'), ...commonErrors },
      },
    },
    async (request, reply) => {
      const { orgId } = requireAdmin(request, NEED);
      const data = await builds.bundle(orgId, request.params.id, request.params.version_id);
      return reply
        .type('application/gzip')
        .header('content-disposition', `attachment; filename="${request.params.version_id}.tar.gz"`)
        .send(data);
    },
  );
};
