import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { type ZodType, z } from 'zod';

type Document = Parameters<typeof jsonSchemaTransform>[0];

/**
 * The zod transform, plus bodies given per content type (`body: {content: {type: {schema}}}`,
 * as the versions route takes JSON or a gzipped bundle), which it does not handle itself.
 */
function transform(document: Document) {
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
    transform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
