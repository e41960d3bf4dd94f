import { sql } from 'kysely';
import type { Db } from '../db/types.js';
import { storeFilterCondition } from './store-filter.js';

const columns = ['namespace', 'key', 'value', 'created_at', 'updated_at'] as const;

export function putItem(db: Db, orgId: string, namespace: string, key: string, value: Record<string, unknown>) {
  return db
    .insertInto('langgraph_store_items')
    .values({ org_id: orgId, namespace, key, value: JSON.stringify(value) })
    .onConflict((conflict) =>
      conflict
        .columns(['org_id', 'namespace', 'key'])
        .doUpdateSet({ value: JSON.stringify(value), updated_at: sql`clock_timestamp()` }),
    )
    .execute();
}

export function getItem(db: Db, orgId: string, namespace: string, key: string) {
  return db
    .selectFrom('langgraph_store_items')
    .select(columns)
    .where('org_id', '=', orgId)
    .where('namespace', '=', namespace)
    .where('key', '=', key)
    .executeTakeFirst();
}

export async function deleteItem(db: Db, orgId: string, namespace: string, key: string): Promise<void> {
  await db
    .deleteFrom('langgraph_store_items')
    .where('org_id', '=', orgId)
    .where('namespace', '=', namespace)
    .where('key', '=', key)
    .execute();
}

/** Items under a namespace prefix (joined labels; '' for all) whose value matches `filter` (store-filter.ts), newest first. */
export function searchItems(
  db: Db,
  orgId: string,
  prefix: string,
  filter: Record<string, unknown> | undefined,
  page: { limit: number; offset: number },
) {
  let query = db.selectFrom('langgraph_store_items').select(columns).where('org_id', '=', orgId);
  if (prefix !== '') {
    query = query.where((eb) =>
      eb.or([eb('namespace', '=', prefix), eb(sql`left(namespace, ${prefix.length + 1})`, '=', `${prefix}.`)]),
    );
  }
  if (filter) query = query.where(storeFilterCondition(filter));
  return query
    .orderBy('updated_at', 'desc')
    .orderBy('namespace')
    .orderBy('key')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export async function namespaces(db: Db, orgId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('langgraph_store_items')
    .select('namespace')
    .distinct()
    .where('org_id', '=', orgId)
    .orderBy('namespace')
    .execute();
  return rows.map((row) => row.namespace);
}
