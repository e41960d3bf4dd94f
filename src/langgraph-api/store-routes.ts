import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf } from '../auth/plugin.js';
import type { LangGraphDeps } from './deps.js';
import { unprocessable } from './errors.js';
import { errors, jsonObject, limitField, offsetField } from './schemas.js';
import { storeFilterSchema } from './store-filter.js';
import * as repo from './store-repo.js';
import { listNamespaces, namespaceSchema, noIndexMessage, toItem } from './store-service.js';

const tags = ['langgraph'];

const itemSchema = z
  .object({
    namespace: z.array(z.string()),
    key: z.string(),
    value: jsonObject,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'LangGraphStoreItem' });

const itemRef = z.object({ namespace: namespaceSchema.min(1, 'namespace must have a label'), key: z.string().min(1) });

/** The store (CONTRACTS §14 "Store"): items per organization in the database. */
export const storeRoutes: FastifyPluginAsyncZod<LangGraphDeps> = async (app, { db }) => {
  const org = (request: Parameters<typeof principalOf>[0]) => principalOf(request).orgId;

  app.put(
    '/store/items',
    {
      schema: {
        tags,
        operationId: 'langgraphPutItem',
        summary: 'Store an item (replaces the item of that namespace and key)',
        body: itemRef.extend({
          value: jsonObject,
          index: z.union([z.literal(false), z.array(z.string())]).nullish(),
          ttl: z.number().nullish(),
        }),
        response: { 204: z.null(), ...errors },
      },
    },
    async (request, reply) => {
      const { namespace, key, value, index } = request.body;
      if (Array.isArray(index)) throw noIndex('index');
      await repo.putItem(db, org(request), namespace.join('.'), key, value);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/store/items',
    {
      schema: {
        tags,
        operationId: 'langgraphGetItem',
        summary: 'One item, or null',
        querystring: z.object({
          namespace: z.string().optional(),
          key: z.string().min(1),
          refresh_ttl: z.string().optional(),
        }),
        response: { 200: itemSchema.nullable(), ...errors },
      },
    },
    async (request) => {
      const namespace = request.query.namespace ?? '';
      const row = await repo.getItem(db, org(request), namespace, request.query.key);
      return row ? toItem(row) : null;
    },
  );

  app.delete(
    '/store/items',
    {
      schema: {
        tags,
        operationId: 'langgraphDeleteItem',
        summary: 'Delete an item',
        body: itemRef,
        response: { 204: z.null(), ...errors },
      },
    },
    async (request, reply) => {
      await repo.deleteItem(db, org(request), request.body.namespace.join('.'), request.body.key);
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/store/items/search',
    {
      schema: {
        tags,
        operationId: 'langgraphSearchItems',
        summary: 'Items under a namespace prefix whose value matches a filter',
        body: z.object({
          namespace_prefix: namespaceSchema.nullish().transform((v) => v ?? []),
          filter: storeFilterSchema,
          limit: limitField(10),
          offset: offsetField,
          query: z.string().nullish(),
          refresh_ttl: z.boolean().nullish(),
        }),
        response: {
          200: z.object({ items: z.array(itemSchema.extend({ score: z.number().nullable() })) }),
          ...errors,
        },
      },
    },
    async (request) => {
      const { namespace_prefix, filter, limit, offset, query } = request.body;
      if (query) throw noIndex('query');
      const rows = await repo.searchItems(db, org(request), namespace_prefix.join('.'), filter, { limit, offset });
      return { items: rows.map((row) => ({ ...toItem(row), score: null })) };
    },
  );

  app.post(
    '/store/namespaces',
    {
      schema: {
        tags,
        operationId: 'langgraphListNamespaces',
        summary: 'The namespaces items are stored under',
        body: z.object({
          prefix: namespaceSchema.nullish(),
          suffix: namespaceSchema.nullish(),
          max_depth: z.number().int().min(1).nullish(),
          limit: limitField(100),
          offset: offsetField,
        }),
        response: { 200: z.object({ namespaces: z.array(z.array(z.string())) }), ...errors },
      },
    },
    async (request) => ({ namespaces: await listNamespaces(db, org(request), request.body) }),
  );
};

/** crewd's store has no embedding index: semantic search is refused by name (CONTRACTS §14). */
function noIndex(field: string) {
  return unprocessable(noIndexMessage(field));
}
