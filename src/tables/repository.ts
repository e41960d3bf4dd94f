import type { Transaction } from 'kysely';
import type { StoredColumn } from '../db/schema/tables.js';
import type { Database, Db } from '../db/types.js';

const catalogColumns = [
  'id',
  'org_id',
  'name',
  'description',
  'columns',
  'row_count',
  'revision',
  'created_at',
  'updated_at',
] as const;

export function findTable(db: Db, orgId: string, id: string) {
  return db
    .selectFrom('tables')
    .select(catalogColumns)
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * Locks a table's catalog row for the rest of the transaction. Every write to a table takes this
 * lock first, so writes to one table and changes of its columns never interleave or deadlock. A
 * row write takes it by bumping `data_version` (an update takes the same lock as FOR NO KEY
 * UPDATE), so a total counted at one version is known to hold while the version stays; a change
 * of definition bumps `revision` instead.
 */
export function lockTable(db: Transaction<Database>, orgId: string, id: string, mode: 'rows' | 'definition') {
  if (mode === 'rows') {
    return db
      .updateTable('tables')
      .set((eb) => ({ data_version: eb('data_version', '+', 1) }))
      .where('org_id', '=', orgId)
      .where('id', '=', id)
      .returning(catalogColumns)
      .executeTakeFirst();
  }
  return db
    .selectFrom('tables')
    .select(catalogColumns)
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export type TableRecord = NonNullable<Awaited<ReturnType<typeof findTable>>>;

export function listTables(db: Db, orgId: string, page: { limit: number; offset: number }) {
  return db
    .selectFrom('tables')
    .select(catalogColumns)
    .where('org_id', '=', orgId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export function insertTable(
  db: Db,
  row: { id: string; org_id: string; name: string; description: string | null; columns: StoredColumn[] },
) {
  return db
    .insertInto('tables')
    .values({ ...row, columns: JSON.stringify(row.columns) })
    .returning(catalogColumns)
    .executeTakeFirstOrThrow();
}

export function updateTable(
  db: Db,
  id: string,
  patch: { name?: string; description?: string | null; columns?: StoredColumn[] },
) {
  const { columns, ...rest } = patch;
  return db
    .updateTable('tables')
    .set((eb) => ({
      ...rest,
      ...(columns ? { columns: JSON.stringify(columns) } : {}),
      revision: eb('revision', '+', 1),
      updated_at: new Date(),
    }))
    .where('id', '=', id)
    .returning(catalogColumns)
    .executeTakeFirstOrThrow();
}

export function deleteTable(db: Db, id: string) {
  return db.deleteFrom('tables').where('id', '=', id).execute();
}

export function adjustRowCount(db: Db, id: string, delta: number) {
  return db
    .updateTable('tables')
    .set((eb) => ({ row_count: eb('row_count', '+', delta) }))
    .where('id', '=', id)
    .execute();
}
