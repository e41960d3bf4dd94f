import { z } from 'zod';
import type { Db } from '../db/types.js';
import type { CallAnswer } from '../execution/run-calls.js';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../json-depth.js';
import { jsonObject, limitField, offsetField } from './schemas.js';
import { storeFilterSchema } from './store-filter.js';
import * as repo from './store-repo.js';
import { listNamespaces, namespaceSchema, noIndexMessage, toItem } from './store-service.js';

/**
 * A graph's store call, as the runner's `store.call` line carries it (docs/runner-protocol.md, "Calls"): the ops of
 * LangGraph's BaseStore, the fields `/store` takes. Strict: a field the op does not take refuses the call, and no
 * field names an organization (the run's is the only one a call reaches).
 */
const ref = { namespace: namespaceSchema.min(1, 'namespace must have a label'), key: z.string().min(1).max(1024) };
const callSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('get'), ...ref }),
  z.strictObject({
    op: z.literal('put'),
    ...ref,
    value: jsonObject,
    index: z.union([z.literal(false), z.array(z.string())]).nullish(),
  }),
  z.strictObject({ op: z.literal('delete'), ...ref }),
  z.strictObject({
    op: z.literal('search'),
    namespace_prefix: namespaceSchema.nullish().transform((v) => v ?? []),
    filter: storeFilterSchema,
    limit: limitField(10),
    offset: offsetField,
    query: z.string().nullish(),
  }),
  z.strictObject({
    op: z.literal('list_namespaces'),
    prefix: namespaceSchema.nullish(),
    suffix: namespaceSchema.nullish(),
    max_depth: z.number().int().min(1).nullish(),
    limit: limitField(100),
    offset: offsetField,
  }),
]);

type StoreCall = z.infer<typeof callSchema>;

const refused = (error: string): CallAnswer => ({ error });

/**
 * Runs one call for `orgId`, the organization of the run whose channel it came on: never one the call names.
 * A fault of the database is thrown (the caller logs it; the graph is told the call failed).
 */
export async function answerStoreCall(db: Db, orgId: string, fields: Record<string, unknown>): Promise<CallAnswer> {
  const parsed = callSchema.safeParse(fields);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return refused(`store call refused: ${issue?.path.join('.') || 'op'}: ${issue?.message ?? 'invalid'}`);
  }
  if (nestedDeeperThan(fields, MAX_JSON_DEPTH - 2)) {
    return refused(`store call refused: value nested deeper than ${MAX_JSON_DEPTH - 2} levels`);
  }
  try {
    return { result: await run(db, orgId, parsed.data) };
  } catch (error) {
    if (error instanceof CallRefused) return refused(error.message);
    throw error;
  }
}

async function run(db: Db, orgId: string, call: StoreCall): Promise<unknown> {
  switch (call.op) {
    case 'get': {
      const row = await repo.getItem(db, orgId, call.namespace.join('.'), call.key);
      return row ? toItem(row) : null;
    }
    case 'put':
      if (Array.isArray(call.index)) throw new CallRefused(noIndexMessage('index'));
      await repo.putItem(db, orgId, call.namespace.join('.'), call.key, call.value);
      return null;
    case 'delete':
      await repo.deleteItem(db, orgId, call.namespace.join('.'), call.key);
      return null;
    case 'search': {
      if (call.query) throw new CallRefused(noIndexMessage('query'));
      const page = { limit: call.limit, offset: call.offset };
      const rows = await repo.searchItems(db, orgId, call.namespace_prefix.join('.'), call.filter, page);
      return rows.map((row) => ({ ...toItem(row), score: null }));
    }
    case 'list_namespaces':
      return listNamespaces(db, orgId, call);
  }
}

/** A call crewd refuses for what it asks (semantic search): its message goes back to the graph. */
export class CallRefused extends Error {}
