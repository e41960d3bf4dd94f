import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { type ZodType, z } from 'zod';

type TransformDocument = Parameters<typeof jsonSchemaTransform>[0];

/**
 * The zod transform, plus bodies given per content type (`body: {content: {type: {schema}}}`,
 * as the versions route takes JSON or a gzipped bundle), which it does not handle itself.
 */
function transform(document: TransformDocument) {
  const body = (document.schema as { body?: { content?: Record<string, { schema: ZodType }> } } | undefined)?.body;
  if (!body?.content) return jsonSchemaTransform(document);
  const result = jsonSchemaTransform({ ...document, schema: { ...document.schema, body: undefined } });
  const content = Object.fromEntries(
    Object.entries(body.content).map(([type, { schema }]) => [
      type,
      { schema: z.toJSONSchema(schema, { unrepresentable: 'any', io: 'input' }) },
    ]),
  );
  return { ...result, schema: { ...result.schema, body: { content } } };
}

/** One named response per error status, so every client sees the same names and meanings. */
const NAMED_RESPONSES: Record<string, { name: string; description: string }> = {
  400: { name: 'BadRequest', description: 'Invalid body, query or value; the message names the field' },
  401: { name: 'Unauthorized', description: 'Missing or unknown API key (`Invalid API key`)' },
  403: { name: 'Forbidden', description: 'A member key on a route that needs an admin key' },
  404: { name: 'NotFound', description: 'No such resource in the caller’s organization' },
  409: {
    name: 'Conflict',
    description:
      'Taken name, busy thread, an Idempotency-Key reused with another body, or a second organization without runner isolation',
  },
  413: { name: 'PayloadTooLarge', description: 'The body is larger than the service accepts' },
  422: { name: 'LimitExceeded', description: 'An operator’s limit refuses the request; the message names the setting' },
  429: { name: 'RateLimited', description: 'Too many requests for this key; `Retry-After` says when to try again' },
  500: { name: 'Internal', description: 'Unexpected error; details only in the service log' },
  503: { name: 'Unavailable', description: 'The database cannot be reached' },
};

const SUCCESS_DESCRIPTIONS: Record<string, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
};

type Operation = {
  tags?: string[];
  summary?: string;
  description?: string;
  security?: unknown[];
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Record<string, unknown> }> }>;
};
type Document = {
  paths?: Record<string, Record<string, Operation>>;
  components?: { responses?: Record<string, unknown>; schemas?: Record<string, unknown> };
};

/** Errors become `$ref`s to named responses, SSE answers `text/event-stream`, key-less routes lose the lock. */
export function finishDocument<T>(document: T): T {
  const doc = document as Document;
  const used = new Set<string>();
  for (const [path, operations] of Object.entries(doc.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const responses = operation.responses ?? {};
      // The LangGraph API's routes answer errors of their own shape ({"detail"}) and need a key (CONTRACTS §14).
      const langgraph = Object.values(responses).some((response) => isLangGraphError(response));
      const authenticated = path.startsWith('/v1/') || langgraph;
      if (!authenticated) operation.security = [];
      if (authenticated) responses[429] = {};
      if (operation.tags?.includes('langgraph') && !operation.description) {
        operation.description = `${operation.summary ?? ''}. A route of the LangGraph Agent Server API, as its official clients call it (docs/langgraph.md).`;
      }
      for (const [status, response] of Object.entries(responses)) {
        const named = NAMED_RESPONSES[status];
        if (named && !isLangGraphError(response)) {
          used.add(status);
          responses[status] = { $ref: `#/components/responses/${named.name}` } as never;
          continue;
        }
        const json = response.content?.['application/json'];
        if (json?.schema?.['x-event-stream']) {
          const { 'x-event-stream': _marker, ...schema } = json.schema;
          response.content = { 'text/event-stream': { schema } };
        }
        response.description = SUCCESS_DESCRIPTIONS[status] ?? response.description;
      }
      operation.responses = responses;
    }
  }
  doc.components ??= {};
  doc.components.responses = Object.fromEntries(
    [...used].sort().map((status) => {
      const { name, description } = NAMED_RESPONSES[status]!;
      const content = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
      return [name, { description, content }];
    }),
  );
  return document;
}

/** A response whose body is the LangGraph API's `{"detail"}` (src/langgraph-api/schemas.ts). */
function isLangGraphError(response: { content?: Record<string, { schema?: Record<string, unknown> }> }): boolean {
  return response.content?.['application/json']?.schema?.$ref === '#/components/schemas/LangGraphError';
}

type TransformInput = Parameters<typeof jsonSchemaTransform>[0];

/** Marks the 200 answer of every route with the `sse` option, so finishDocument lists it as an event stream. */
function markEventStreams(input: TransformInput) {
  const result = transform(input);
  if (!(input.route as { sse?: unknown }).sse) return result;
  const schema = result.schema as { response?: Record<string, Record<string, unknown>> };
  const ok = schema.response?.[200];
  if (ok) schema.response![200] = { ...ok, 'x-event-stream': true };
  return result;
}

/** OpenAPI 3.1 generated from the route schemas, served at /openapi.json, with a reader at /docs. */
export async function registerOpenApi(app: FastifyInstance, version: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'crewd API',
        version,
        description:
          'Run deployed agent workflows (crews), follow them live, keep threads, store tables, get signed webhooks.',
      },
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `crewd_…`' } },
      },
      security: [{ bearerAuth: [] }],
    },
    transform: markEventStreams,
    transformObject: (input) => finishDocument(jsonSchemaTransformObject(input)),
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
