import type { Insertable } from 'kysely';
import type { IncomingWebhooksTable } from '../db/schema/webhooks.js';
import type { Db } from '../db/types.js';

type Page = { limit: number; offset: number };

export function insertIncomingWebhook(db: Db, row: Insertable<IncomingWebhooksTable>) {
  return db
    .insertInto('incoming_webhooks')
    .values(row)
    .returning(['id', 'deployment_id', 'environment', 'name', 'created_at'])
    .executeTakeFirstOrThrow();
}

const incomingColumns = ['id', 'org_id', 'deployment_id', 'environment', 'name', 'created_at'] as const;

export function findIncomingWebhook(db: Db, orgId: string, id: string) {
  return db
    .selectFrom('incoming_webhooks')
    .select(incomingColumns)
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export function findIncomingWebhookByToken(db: Db, tokenHash: string) {
  return db
    .selectFrom('incoming_webhooks')
    .select(incomingColumns)
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
}

export function listIncomingWebhooks(db: Db, orgId: string, deploymentId: string | undefined, page: Page) {
  let query = db.selectFrom('incoming_webhooks').select(incomingColumns).where('org_id', '=', orgId);
  if (deploymentId !== undefined) query = query.where('deployment_id', '=', deploymentId);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute();
}

export async function deleteIncomingWebhook(db: Db, orgId: string, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom('incoming_webhooks')
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}
