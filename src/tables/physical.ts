import { sql } from 'kysely';
import type { StoredColumn } from '../db/schema/tables.js';
import type { Db } from '../db/types.js';
import { INDEXED_TYPES, SQL_TYPES, safeIdentifier } from './columns.js';

/** Physical DDL. Every identifier is a generated id (checked by safeIdentifier), never a user's name. */

export const DATA_SCHEMA = 'data';

export function tableRef(tableId: string) {
  return sql.table(`${DATA_SCHEMA}.${safeIdentifier(tableId)}`);
}

function indexName(tableId: string, suffix: string) {
  return sql.id(safeIdentifier(`${tableId}_${suffix}`));
}

function columnSql(column: StoredColumn) {
  return sql`${sql.id(safeIdentifier(column.id))} ${sql.raw(SQL_TYPES[column.type])}`;
}

export async function createPhysicalTable(db: Db, tableId: string, columns: StoredColumn[]): Promise<void> {
  // User columns come right after the id and the system columns last: PostgreSQL decodes a row
  // from its first column on, so filters on user columns decode fewer columns (measured: a
  // filtered count ~20% faster than with the system columns first).
  const definitions = [
    sql`id text collate "C" primary key`,
    ...columns.map(columnSql),
    sql`created_at timestamptz not null`,
    sql`updated_at timestamptz not null`,
    sql`created_by text not null`,
    sql`updated_by text not null`,
  ];
  // Vacuumed after 2% new or 5% changed rows instead of 20%: index-only counts stay index-only.
  await sql`create table ${tableRef(tableId)} (${sql.join(definitions)}) with (
    autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_vacuum_scale_factor = 0.05)`.execute(db);
  // The default order (newest first, ties on id). On created_at alone: the rows of a batch share
  // one time, so the index deduplicates (a tenth of the size, cheaper inserts), and the ties are
  // sorted on id within their small group.
  await sql`create index ${indexName(tableId, 'created')} on ${tableRef(tableId)} (created_at)`.execute(db);
  for (const column of columns) await createColumnIndex(db, tableId, column);
}

export async function dropPhysicalTable(db: Db, tableId: string): Promise<void> {
  await sql`drop table if exists ${tableRef(tableId)}`.execute(db);
}

export async function addPhysicalColumn(db: Db, tableId: string, column: StoredColumn): Promise<void> {
  await sql`alter table ${tableRef(tableId)} add column ${columnSql(column)}`.execute(db);
  await createColumnIndex(db, tableId, column);
}

/** Dropping the column drops its index with it. */
export async function dropPhysicalColumn(db: Db, tableId: string, columnId: string): Promise<void> {
  await sql`alter table ${tableRef(tableId)} drop column ${sql.id(safeIdentifier(columnId))}`.execute(db);
}

async function createColumnIndex(db: Db, tableId: string, column: StoredColumn): Promise<void> {
  if (!INDEXED_TYPES.has(column.type)) return;
  await sql`create index ${indexName(tableId, column.id)} on ${tableRef(tableId)} (${sql.id(safeIdentifier(column.id))})`.execute(
    db,
  );
}

/** A column whose type changes to one that is (or stops being) indexed gets its index adjusted. */
export async function syncColumnIndex(db: Db, tableId: string, column: StoredColumn): Promise<void> {
  await sql`drop index if exists ${sql.table(`${DATA_SCHEMA}.${safeIdentifier(`${tableId}_${column.id}`)}`)}`.execute(
    db,
  );
  await createColumnIndex(db, tableId, column);
}
