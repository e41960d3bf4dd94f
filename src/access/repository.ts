import type { Db, Role } from '../db/types.js';

const keyColumns = ['id', 'org_id', 'name', 'role', 'created_at'] as const;

export function insertOrganization(db: Db, row: { id: string; name: string }) {
  return db.insertInto('organizations').values(row).returning(['id', 'name', 'created_at']).executeTakeFirstOrThrow();
}

export function listOrganizations(db: Db, page: { limit: number; offset: number }) {
  return db
    .selectFrom('organizations')
    .select(['id', 'name', 'created_at'])
    .orderBy('created_at', 'asc')
    .orderBy('id', 'asc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export function insertApiKey(db: Db, row: { id: string; org_id: string; name: string; role: Role; key_hash: string }) {
  return db.insertInto('api_keys').values(row).returning(keyColumns).executeTakeFirstOrThrow();
}

export function listApiKeys(db: Db, orgId: string) {
  return db
    .selectFrom('api_keys')
    .select(keyColumns)
    .where('org_id', '=', orgId)
    .orderBy('created_at', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

export async function deleteApiKey(db: Db, orgId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('api_keys').where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export function findAdminKey(db: Db, orgId: string) {
  return db
    .selectFrom('api_keys')
    .select('id')
    .where('org_id', '=', orgId)
    .where('role', '=', 'admin')
    .executeTakeFirst();
}
