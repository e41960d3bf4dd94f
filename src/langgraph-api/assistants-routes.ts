import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf } from '../auth/plugin.js';
import { createAssistantService } from './assistants.js';
import type { LangGraphDeps } from './deps.js';
import { answerPage, pageAndOne } from './pagination.js';
import { flag } from './runs-schemas.js';
import {
  assistantParams,
  assistantSchema,
  assistantVersionSchema,
  countAssistantsBody,
  createAssistantBody,
  errors,
  jsonObject,
  limitField,
  offsetField,
  optionalObject,
  patchAssistantBody,
  searchAssistantsBody,
} from './schemas.js';
import { createLangGraphThreads } from './threads.js';

const tags = ['langgraph'];
const nullableSchema = jsonObject.nullable();

/** JSON Schema of a value of any shape: what /schemas says where the version recorded nothing. */
const ANY_OBJECT = { type: 'object', additionalProperties: true };

/** Assistants (CONTRACTS §14): defaults per deployment and those made through the API. */
export const assistantRoutes: FastifyPluginAsyncZod<LangGraphDeps> = async (app, { db, services }) => {
  const assistants = createAssistantService(db);
  const threads = createLangGraphThreads(db, services.threads);
  const org = (request: Parameters<typeof principalOf>[0]) => principalOf(request).orgId;

  app.post(
    '/assistants',
    {
      schema: {
        tags,
        operationId: 'langgraphCreateAssistant',
        summary: 'Create an assistant of a deployment (graph_id: its name or id)',
        body: createAssistantBody,
        response: { 200: assistantSchema, ...errors },
      },
    },
    async (request) => {
      const body = request.body;
      return assistants.create(org(request), {
        ...body,
        config: body.config ?? {},
        context: body.context ?? {},
        metadata: body.metadata ?? {},
      });
    },
  );

  app.post(
    '/assistants/search',
    {
      schema: {
        tags,
        operationId: 'langgraphSearchAssistants',
        summary: 'Search assistants',
        body: searchAssistantsBody,
        response: { 200: z.array(assistantSchema), ...errors },
      },
    },
    async (request, reply) => {
      const { limit, offset, ...filter } = request.body;
      const page = { limit, offset };
      return answerPage(reply, await assistants.search(org(request), filter, pageAndOne(page)), page);
    },
  );

  app.post(
    '/assistants/count',
    {
      schema: {
        tags,
        operationId: 'langgraphCountAssistants',
        summary: 'Count assistants',
        body: countAssistantsBody,
        response: { 200: z.number().int(), ...errors },
      },
    },
    async (request) => assistants.count(org(request), request.body),
  );

  app.get(
    '/assistants/:assistant_id',
    {
      schema: {
        tags,
        operationId: 'langgraphGetAssistant',
        summary: 'Get an assistant (its UUID, a graph_id or a deployment id)',
        params: assistantParams,
        response: { 200: assistantSchema, ...errors },
      },
    },
    async (request) => assistants.get(org(request), request.params.assistant_id),
  );

  app.patch(
    '/assistants/:assistant_id',
    {
      schema: {
        tags,
        operationId: 'langgraphUpdateAssistant',
        summary: 'Update an assistant made through the API (a new version)',
        params: assistantParams,
        body: patchAssistantBody,
        response: { 200: assistantSchema, ...errors },
      },
    },
    async (request) => assistants.update(org(request), request.params.assistant_id, request.body),
  );

  app.delete(
    '/assistants/:assistant_id',
    {
      schema: {
        tags,
        operationId: 'langgraphDeleteAssistant',
        summary: 'Delete an assistant made through the API (with delete_threads, the threads it ran in)',
        params: assistantParams,
        querystring: z.object({ delete_threads: flag }),
        response: { 204: z.null(), ...errors },
      },
    },
    async (request, reply) => {
      const orgId = org(request);
      const assistantId = await assistants.remove(orgId, request.params.assistant_id);
      if (request.query.delete_threads) {
        // The official server's: the threads whose metadata names the assistant (a run marks them).
        await threads.removeMatching(orgId, { assistant_id: assistantId }, (runId) =>
          services.runs.cancel(orgId, runId),
        );
      }
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/assistants/:assistant_id/versions',
    {
      schema: {
        tags,
        operationId: 'langgraphAssistantVersions',
        summary: "An assistant's versions, newest first",
        params: assistantParams,
        body: z.object({ metadata: optionalObject, limit: limitField(10), offset: offsetField }),
        response: { 200: z.array(assistantVersionSchema), ...errors },
      },
    },
    async (request) => {
      const { limit, offset, metadata } = request.body;
      return assistants.versions(org(request), request.params.assistant_id, { metadata }, { limit, offset });
    },
  );

  app.post(
    '/assistants/:assistant_id/latest',
    {
      schema: {
        tags,
        operationId: 'langgraphSetLatestAssistantVersion',
        summary: "Make one of an assistant's versions its current one",
        params: assistantParams,
        body: z.object({ version: z.number().int().min(1) }),
        response: { 200: assistantSchema, ...errors },
      },
    },
    async (request) => assistants.setLatest(org(request), request.params.assistant_id, request.body.version),
  );

  app.get(
    '/assistants/:assistant_id/schemas',
    {
      schema: {
        tags,
        operationId: 'langgraphAssistantSchemas',
        summary: "The graph's input, output, state, config and context JSON schemas",
        params: assistantParams,
        response: {
          200: z.object({
            graph_id: z.string(),
            input_schema: nullableSchema,
            output_schema: nullableSchema,
            state_schema: nullableSchema,
            config_schema: nullableSchema,
            context_schema: nullableSchema,
          }),
          ...errors,
        },
      },
    },
    async (request) => {
      const { resolved, schemas } = await assistants.recorded(org(request), request.params.assistant_id);
      const recorded = (schemas ?? {}) as Record<string, Record<string, unknown> | undefined>;
      const input = recorded.input ?? recorded.input_schema ?? ANY_OBJECT;
      return {
        graph_id: resolved.deployment.name,
        input_schema: input,
        output_schema: recorded.output ?? recorded.output_schema ?? ANY_OBJECT,
        state_schema: recorded.state ?? recorded.state_schema ?? input,
        config_schema: recorded.config ?? recorded.config_schema ?? null,
        context_schema: recorded.context ?? recorded.context_schema ?? null,
      };
    },
  );

  app.get(
    '/assistants/:assistant_id/graph',
    {
      schema: {
        tags,
        operationId: 'langgraphAssistantGraph',
        summary: "The graph's nodes and edges",
        params: assistantParams,
        querystring: z.object({ xray: z.union([z.coerce.number().int(), z.enum(['true', 'false'])]).optional() }),
        response: {
          200: z.object({ nodes: z.array(jsonObject), edges: z.array(jsonObject) }),
          ...errors,
        },
      },
    },
    async (request) => {
      const { resolved, schemas } = await assistants.recorded(org(request), request.params.assistant_id);
      const drawn = (schemas as { graph?: { nodes?: unknown; edges?: unknown } } | null)?.graph;
      if (drawn && Array.isArray(drawn.nodes) && Array.isArray(drawn.edges)) {
        return { nodes: drawn.nodes as Record<string, unknown>[], edges: drawn.edges as Record<string, unknown>[] };
      }
      // Without the nodes the build recorded: the whole deployment as one node between start and end.
      const name = resolved.deployment.name;
      return {
        nodes: [
          { id: '__start__', type: 'schema', data: '__start__' },
          { id: name, type: 'runnable', data: { id: ['crewd', 'deployment'], name } },
          { id: '__end__', type: 'schema', data: '__end__' },
        ],
        edges: [
          { source: '__start__', target: name, conditional: false },
          { source: name, target: '__end__', conditional: false },
        ],
      };
    },
  );

  app.get(
    '/assistants/:assistant_id/subgraphs',
    {
      schema: {
        tags,
        operationId: 'langgraphAssistantSubgraphs',
        summary: "The graph's subgraphs' schemas (none recorded)",
        params: assistantParams,
        response: { 200: jsonObject, ...errors },
      },
    },
    async (request) => {
      await assistants.get(org(request), request.params.assistant_id);
      return {};
    },
  );
};
