import { type RawBuilder, sql } from 'kysely';
import type { ColumnKind, StoredColumn } from '../db/schema/tables.js';
import type { Db } from '../db/types.js';
import { CASTS, safeIdentifier } from './columns.js';
import { tableRef } from './physical.js';
import type { SqlValue } from './values.js';

/** A physical row: system columns plus one member per column id. */
export type RowRecord = {
  id: string;
  created_at: Date;
  updated_at: Date;
  created_by: string;
  updated_by: string;
} & Record<string, unknown>;

/** Timestamps are kept to the millisecond, the precision the API shows, so a returned value filters exactly. */
const NOW = sql`date_trunc('milliseconds', now())`;
/** An update always moves `updated_at` forward, even within the same millisecond. */
const TOUCH = sql`updated_at = greatest(${NOW}, updated_at + interval '1 millisecond')`;

const col = (column: StoredColumn) => sql.id(safeIdentifier(column.id));

function selectList(columns: StoredColumn[]) {
  return sql.join([sql`id, created_at, updated_at, created_by, updated_by`, ...columns.map(col)]);
}

function cast(value: SqlValue, type: ColumnKind) {
  return sql`${value}::${sql.raw(CASTS[type])}`;
}

/** One set of rows: parallel arrays, one per column in `columns` order. */
export interface RowBatch {
  ids: string[];
  values: SqlValue[][];
}

/**
 * Inserts a batch with one statement of one array parameter per column (`unnest`), so a batch of
 * 1000 rows costs the database one parse and plan whatever its width. The caller knows every
 * value it sent, so only the creation time comes back.
 */
export async function insertRows(
  db: Db,
  tableId: string,
  columns: StoredColumn[],
  batch: RowBatch,
  actor: string,
): Promise<Date> {
  const arrays = [
    sql`${batch.ids}::text[]`,
    ...columns.map((column, index) => {
      // jsonb travels as JSON text, cast per element below.
      const elementType = column.type === 'json' ? 'text' : CASTS[column.type];
      return sql`${batch.values[index] ?? []}::${sql.raw(elementType)}[]`;
    }),
  ];
  const names = sql.join([sql`id`, ...columns.map(col)]);
  const targets = sql.join([sql`id, created_at, updated_at, created_by, updated_by`, ...columns.map(col)]);
  const picked = sql.join([
    sql`u.id, ${NOW}, ${NOW}, ${actor}::text, ${actor}::text`,
    ...columns.map((column) => (column.type === 'json' ? sql`u.${col(column)}::jsonb` : sql`u.${col(column)}`)),
  ]);
  const result = await sql<{ created_at: Date }>`
    with inserted as (
      insert into ${tableRef(tableId)} (${targets})
      select ${picked} from unnest(${sql.join(arrays)}) as u(${names})
      returning created_at
    )
    select created_at from inserted limit 1`.execute(db);
  const createdAt = result.rows[0]?.created_at;
  if (!createdAt) throw new Error('insert returned no rows');
  return createdAt;
}

export async function findRow(db: Db, tableId: string, columns: StoredColumn[], rowId: string) {
  const result = await sql<RowRecord>`
    select ${selectList(columns)} from ${tableRef(tableId)} where id = ${rowId}`.execute(db);
  return result.rows[0];
}

export interface PageQuery {
  where: RawBuilder<boolean>;
  /** The filter is empty: every row matches, so the total is the catalog's exact `row_count`. */
  matchesAll: boolean;
  sortIdent: string;
  direction: 'asc' | 'desc';
  limit: number;
  offset: number;
  /** A total counted before, and the `data_version` it was counted at. */
  known: KnownTotal | undefined;
}

export interface KnownTotal {
  version: number;
  total: number;
}

/**
 * One page of rows and the number of rows matching, in one statement (one round trip, one
 * snapshot), along with the table's definition revision as of that snapshot, so a cached
 * definition can be checked. The total is counted only when nothing cheaper proves it: an empty
 * filter takes the catalog's `row_count` (kept exact in every write's transaction), and a page
 * shorter than the limit that holds rows (or starts at offset 0) ends the matches, so the total is
 * offset + its length, and a total counted before holds while the table's `data_version` is the
 * one it was counted at (every row write bumps it in its own transaction). PostgreSQL runs an
 * uncorrelated subquery only when a CASE branch reaches it, so the count not needed is never run.
 */
export async function queryPage(
  db: Db,
  table: { id: string; orgId: string },
  columns: StoredColumn[],
  query: PageQuery,
): Promise<{ records: RowRecord[]; total: number; revision: number | null; rowCount: number; dataVersion: number }> {
  const direction = sql.raw(query.direction);
  const sort = sql.id(safeIdentifier(query.sortIdent));
  const catalog = sql`from tables where id = ${table.id} and org_id = ${table.orgId}`;
  const shown = sql`(select count(*) from page)`;
  const counted = query.matchesAll
    ? sql`(select row_count ${catalog})`
    : sql`(select count(*) from ${tableRef(table.id)} where ${query.where})`;
  const known = query.known ?? { version: -1, total: 0 };
  const result = await sql<
    RowRecord & { _total: number; _revision: number | null; _rows: number | null; _version: number | null }
  >`
    with page as (
      select ${selectList(columns)} from ${tableRef(table.id)}
      where ${query.where}
      order by ${sort} ${direction}, id ${direction}
      limit ${query.limit} offset ${query.offset}
    )
    select p.*, c._total, c._revision, c._rows, c._version
    from (
      select (select revision ${catalog}) as _revision, (select row_count ${catalog}) as _rows,
        (select data_version ${catalog}) as _version,
        case when ${shown} < ${query.limit}::int8 and (${shown} > 0 or ${query.offset}::int8 = 0)
          then ${query.offset}::int8 + ${shown}
          when (select data_version ${catalog}) = ${known.version}::int8 then ${known.total}::int8
          else ${counted}::int8 end as _total
    ) c
    left join page p on true`.execute(db);
  const first = result.rows[0];
  return {
    // A page past the end still yields one row, carrying only the total.
    records: result.rows.filter((row) => row.id !== null),
    total: Number(first?._total ?? 0),
    revision: first?._revision ?? null,
    rowCount: Number(first?._rows ?? 0),
    dataVersion: Number(first?._version ?? -1),
  };
}

export interface ColumnSet {
  column: StoredColumn;
  value: SqlValue;
}

function setList(sets: ColumnSet[], actor: string) {
  return sql.join([
    ...sets.map(({ column, value }) => sql`${col(column)} = ${cast(value, column.type)}`),
    TOUCH,
    sql`updated_by = ${actor}::text`,
  ]);
}

export async function updateRow(
  db: Db,
  tableId: string,
  columns: StoredColumn[],
  rowId: string,
  sets: ColumnSet[],
  actor: string,
) {
  const result = await sql<RowRecord>`
    update ${tableRef(tableId)} set ${setList(sets, actor)}
    where id = ${rowId}
    returning ${selectList(columns)}`.execute(db);
  return result.rows[0];
}

export async function updateWhere(
  db: Db,
  tableId: string,
  where: RawBuilder<boolean>,
  sets: ColumnSet[],
  actor: string,
): Promise<number> {
  const result = await sql<{ n: number }>`
    with changed as (update ${tableRef(tableId)} set ${setList(sets, actor)} where ${where} returning 1)
    select count(*)::int8 as n from changed`.execute(db);
  return Number(result.rows[0]?.n ?? 0);
}

export async function countWhere(db: Db, tableId: string, where: RawBuilder<boolean>): Promise<number> {
  const result = await sql<{ n: number }>`select count(*)::int8 as n from ${tableRef(tableId)} where ${where}`.execute(
    db,
  );
  return Number(result.rows[0]?.n ?? 0);
}

export async function deleteRow(db: Db, tableId: string, rowId: string): Promise<boolean> {
  const result = await sql<{ id: string }>`delete from ${tableRef(tableId)} where id = ${rowId} returning id`.execute(
    db,
  );
  return result.rows.length > 0;
}

export async function deleteWhere(db: Db, tableId: string, where: RawBuilder<boolean>): Promise<number> {
  const result = await sql<{ n: number }>`
    with gone as (delete from ${tableRef(tableId)} where ${where} returning 1)
    select count(*)::int8 as n from gone`.execute(db);
  return Number(result.rows[0]?.n ?? 0);
}

/** Each distinct non-null value of a column, typed (`v`) and as exact text (`k`, the key to match it by). */
export async function distinctValues(db: Db, tableId: string, column: StoredColumn) {
  const result = await sql<{ k: string; v: unknown }>`
    select s.v::text as k, s.v from (select distinct ${col(column)} as v from ${tableRef(tableId)}
    where ${col(column)} is not null) s order by 1`.execute(db);
  return result.rows;
}

export async function countWithKeys(db: Db, tableId: string, column: StoredColumn, keys: string[]): Promise<number> {
  const result = await sql<{ n: number }>`
    select count(*)::int8 as n from ${tableRef(tableId)} where ${col(column)}::text = any(${keys}::text[])`.execute(db);
  return Number(result.rows[0]?.n ?? 0);
}

export async function countNulls(db: Db, tableId: string, column: StoredColumn): Promise<number> {
  const result = await sql<{ n: number }>`
    select count(*)::int8 as n from ${tableRef(tableId)} where ${col(column)} is null`.execute(db);
  return Number(result.rows[0]?.n ?? 0);
}

/** Fills column `to` from column `from` through a value map (old value as text → new value). */
export async function copyConverted(
  db: Db,
  tableId: string,
  from: StoredColumn,
  to: StoredColumn,
  keys: string[],
  values: SqlValue[],
): Promise<void> {
  const elementType = to.type === 'json' ? 'text' : CASTS[to.type];
  const converted = to.type === 'json' ? sql`m.v::jsonb` : sql`m.v`;
  await sql`
    update ${tableRef(tableId)} t set ${col(to)} = ${converted}
    from unnest(${keys}::text[], ${values}::${sql.raw(elementType)}[]) as m(k, v)
    where t.${col(from)}::text = m.k`.execute(db);
}
