import type { Kysely, Transaction } from 'kysely';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Backend } from '../db/connect.js';
import type { StoredColumn } from '../db/schema/tables.js';
import type { Database } from '../db/types.js';
import { badRequest, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import { columnsByName } from './columns.js';
import { compileFilter, tableFields } from './filter.js';
import { type IndexPlan, indexPlanFor, matchesAll } from './filter-shape.js';
import { createIndexAdvisor } from './index-advisor.js';
import { createKnownTotals } from './known-totals.js';
import * as repo from './repository.js';
import { checkInsertRow, checkRowPatch, MAX_BATCH_ROWS } from './row-body.js';
import { newRowIds } from './row-ids.js';
import * as rows from './row-repository.js';
import { tableNotFound } from './service.js';
import { outputCell, type SqlValue } from './values.js';

const rowNotFound = () => notFound('Row not found');

/** A row as the API shows it: `id`, one member per column, `_meta`. */
export type ApiRow = Record<string, unknown>;

/** Sets a member as an own property; assignment would set the prototype for `__proto__`. */
function setMember(row: ApiRow, name: string, value: unknown): void {
  if (name === '__proto__') {
    Object.defineProperty(row, name, { value, enumerable: true, writable: true, configurable: true });
  } else {
    row[name] = value;
  }
}

interface Meta {
  created_at: string;
  created_by: string;
  updated_at: string;
  updated_by: string;
}

function buildRow(
  id: string,
  columns: StoredColumn[],
  value: (column: StoredColumn, index: number) => unknown,
  meta: Meta,
) {
  const row: ApiRow = { id };
  columns.forEach((column, index) => {
    setMember(row, column.name, value(column, index));
  });
  row._meta = meta;
  return row;
}

export function toRow(columns: StoredColumn[], record: rows.RowRecord): ApiRow {
  return buildRow(record.id, columns, (column) => outputCell(column.type, record[column.id]), {
    created_at: toIso(record.created_at),
    created_by: record.created_by,
    updated_at: toIso(record.updated_at),
    updated_by: record.updated_by,
  });
}

/** A freshly inserted row, from the values sent: datetimes are already normalised, JSON round-trips. */
function insertedRow(id: string, columns: StoredColumn[], values: SqlValue[], meta: Meta): ApiRow {
  return buildRow(
    id,
    columns,
    (column, index) => {
      const value = values[index] ?? null;
      return column.type === 'json' && value !== null ? JSON.parse(value as string) : value;
    },
    meta,
  );
}

export interface QueryInput {
  filter?: unknown;
  sort_by?: string | undefined;
  sort_direction: 'asc' | 'desc';
  limit: number;
  offset: number;
}

/** A column dropped or a table deleted between reading the catalog and reading the rows. */
const isSchemaRace = (error: unknown) => {
  const code = (error as { code?: unknown }).code;
  return code === '42703' || code === '42P01';
};

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const DEFINITION_CACHE_SIZE = 1000;

/** The statement's parts, and the index its filter shape would want. */
function pageQuery(
  table: repo.TableRecord,
  input: QueryInput,
  known: rows.KnownTotal | undefined,
): rows.PageQuery & { index: IndexPlan | undefined } {
  const fields = tableFields(table.columns);
  const where =
    input.filter === undefined || input.filter === null ? sql<boolean>`true` : compileFilter(input.filter, fields);
  const sortName = input.sort_by ?? 'created_at';
  const sort = fields.get(sortName);
  if (!sort) throw badRequest(`sort_by: unknown column "${sortName}"`);
  return {
    where,
    matchesAll: matchesAll(input.filter),
    sortIdent: sort.ident,
    direction: input.sort_direction,
    limit: input.limit,
    offset: input.offset,
    known,
    index: indexPlanFor(input.filter, fields, sort),
  };
}

export interface RowServiceOptions {
  backend: Backend;
  /** Tables with fewer rows get no indexes built for their filters (TABLE_INDEX_MIN_ROWS). */
  indexMinRows: number;
  logger: Logger;
  /** What one bulk update may write: matched rows × value bytes (MAX_BULK_UPDATE_BYTES). */
  maxBulkUpdateBytes?: number;
  /** What one bulk delete may remove (MAX_BULK_DELETE_ROWS). */
  maxBulkDeleteRows?: number;
}

/** Default of MAX_BULK_UPDATE_BYTES: about 0.1 to 0.3 s of writing on the embedded database (64 MiB took 1.1 s loaded). */
export const DEFAULT_MAX_BULK_UPDATE_BYTES = 16 * 1024 * 1024;

/** Default of MAX_BULK_DELETE_ROWS: about 0.1 to 0.2 s of deleting on the embedded database. */
export const DEFAULT_MAX_BULK_DELETE_ROWS = 100_000;

/** What one row's update writes in values: text as UTF-8, numbers and booleans as 8 bytes. */
function patchBytes(sets: rows.ColumnSet[]): number {
  let bytes = 0;
  for (const { value } of sets) bytes += typeof value === 'string' ? Buffer.byteLength(value) : value === null ? 0 : 8;
  return bytes;
}

export function createRowService(db: Kysely<Database>, options: RowServiceOptions) {
  const indexes = createIndexAdvisor(db, {
    backend: options.backend,
    minRows: options.indexMinRows,
    logger: options.logger,
  });
  const maxBulkUpdateBytes = options.maxBulkUpdateBytes ?? DEFAULT_MAX_BULK_UPDATE_BYTES;
  const maxBulkDeleteRows = options.maxBulkDeleteRows ?? DEFAULT_MAX_BULK_DELETE_ROWS;

  /**
   * One statement writing rows × value bytes holds the table lock and, on the embedded database,
   * the only connection for as long as that takes: past the bound it is refused before writing.
   */
  async function checkBulkUpdateSize(
    trx: Transaction<Database>,
    table: repo.TableRecord,
    where: ReturnType<typeof compileFilter>,
    sets: rows.ColumnSet[],
  ): Promise<void> {
    const bytes = patchBytes(sets);
    if (bytes * Number(table.row_count) <= maxBulkUpdateBytes) return;
    const matched = await rows.countWhere(trx, table.id, where);
    if (matched * bytes <= maxBulkUpdateBytes) return;
    throw badRequest(
      `update: ${matched} matching rows × ${bytes} bytes of values is more than the ${maxBulkUpdateBytes} bytes ` +
        'one bulk update may write (MAX_BULK_UPDATE_BYTES); narrow the filter and update in several requests',
    );
  }

  /** As for updates: a delete of more rows than the bound is refused before anything is deleted. */
  async function checkBulkDeleteSize(
    trx: Transaction<Database>,
    table: repo.TableRecord,
    where: ReturnType<typeof compileFilter>,
  ): Promise<void> {
    if (Number(table.row_count) <= maxBulkDeleteRows) return;
    const matched = await rows.countWhere(trx, table.id, where);
    if (matched <= maxBulkDeleteRows) return;
    throw badRequest(
      `delete: ${matched} matching rows is more than the ${maxBulkDeleteRows} rows one bulk delete may remove ` +
        '(MAX_BULK_DELETE_ROWS); narrow the filter and delete in several requests, or delete the table',
    );
  }

  /** Reads run without locks; a definition change in between is retried with the new catalog. */
  async function withTable<T>(orgId: string, tableId: string, read: (table: repo.TableRecord) => Promise<T>) {
    for (let attempt = 1; ; attempt++) {
      const table = await repo.findTable(db, orgId, tableId);
      if (!table) throw tableNotFound();
      try {
        return await read(table);
      } catch (error) {
        if (attempt < 3 && isSchemaRace(error)) continue;
        throw error;
      }
    }
  }

  /** Writes hold the table's catalog row lock, so row_count stays exact and definitions stay put. */
  function withLockedTable<T>(
    orgId: string,
    tableId: string,
    write: (trx: Transaction<Database>, table: repo.TableRecord) => Promise<T>,
  ) {
    return db.transaction().execute(async (trx) => {
      const table = await repo.lockTable(trx, orgId, tableId, 'rows');
      if (!table) throw tableNotFound();
      return write(trx, table);
    });
  }

  const totals = createKnownTotals();

  /** Table definitions by `org/table`, checked against the catalog revision on every use. */
  const definitions = new Map<string, repo.TableRecord>();
  function remember(key: string, table: repo.TableRecord) {
    definitions.set(key, table);
    if (definitions.size > DEFINITION_CACHE_SIZE) {
      const oldest = definitions.keys().next().value;
      if (oldest !== undefined) definitions.delete(oldest);
    }
  }

  function requireFilter(filter: unknown) {
    if (filter === undefined || filter === null) throw badRequest('filter is required');
    return filter;
  }

  return {
    /** Stops building filter indexes: one under way is cancelled and waited for. */
    close: () => indexes.close(),

    /**
     * The hot path: the API key lookup plus one statement. The table's definition comes from a
     * per-process cache and is trusted only when the statement, in the same snapshot, reads the
     * same revision; otherwise it is fetched again and the query rerun.
     */
    async query(orgId: string, tableId: string, input: QueryInput) {
      const key = `${orgId}/${tableId}`;
      for (let attempt = 1; ; attempt++) {
        const cached = definitions.get(key);
        const table = cached ?? (await repo.findTable(db, orgId, tableId));
        if (!table) {
          definitions.delete(key);
          throw tableNotFound();
        }
        if (!cached) remember(key, table);
        const retry = () => {
          definitions.delete(key);
          return attempt < 4;
        };
        let plan: ReturnType<typeof pageQuery>;
        let totalKey: string;
        try {
          totalKey = totals.keyOf(table.id, table.revision, input.filter);
          plan = pageQuery(table, input, totals.get(totalKey));
        } catch (error) {
          // A column a cached definition lacks may have been added since: check with the catalog first.
          if (cached && retry()) continue;
          throw error;
        }
        let page: Awaited<ReturnType<typeof rows.queryPage>>;
        try {
          page = await rows.queryPage(db, { id: table.id, orgId }, table.columns, plan);
        } catch (error) {
          if (isSchemaRace(error) && retry()) continue;
          throw error;
        }
        if (page.revision !== table.revision) {
          if (retry()) continue;
          throw new Error(`table ${table.id} kept changing while being read`);
        }
        indexes.note({ id: table.id, row_count: page.rowCount }, plan.index);
        totals.set(totalKey, { version: page.dataVersion, total: page.total });
        return {
          rows: page.records.map((record) => toRow(table.columns, record)),
          total: page.total,
          limit: input.limit,
          offset: input.offset,
        };
      }
    },

    async get(orgId: string, tableId: string, rowId: string) {
      return withTable(orgId, tableId, async (table) => {
        const record = await rows.findRow(db, table.id, table.columns, rowId);
        if (!record) throw rowNotFound();
        return toRow(table.columns, record);
      });
    },

    /** One row object, or an array of 1 to 1000; all or nothing. */
    async insert(orgId: string, tableId: string, body: unknown, actor: string) {
      const batch = Array.isArray(body);
      const items = batch ? (body as unknown[]) : [body];
      if (batch && (items.length === 0 || items.length > MAX_BATCH_ROWS)) {
        throw badRequest(`body: a batch holds 1 to ${MAX_BATCH_ROWS} rows (got ${items.length})`);
      }
      if (!batch && !isPlainObject(body)) throw badRequest('body must be a row object or an array of row objects');
      return withLockedTable(orgId, tableId, async (trx, table) => {
        const { columns } = table;
        const indexByName = new Map(columns.map((column, index) => [column.name, index]));
        const checked = items.map((item, index) =>
          checkInsertRow(columns, indexByName, item, batch ? `body[${index}]: ` : ''),
        );
        const values: SqlValue[][] = columns.map((_, c) => checked.map((row) => row[c] ?? null));
        const ids = newRowIds(items.length);
        const createdAt = toIso(await rows.insertRows(trx, table.id, columns, { ids, values }, actor));
        await repo.adjustRowCount(trx, table.id, ids.length);
        // Every row of a batch has the same _meta, so they share one object (it is only serialised).
        const meta = { created_at: createdAt, created_by: actor, updated_at: createdAt, updated_by: actor };
        const out = ids.map((rowId, index) => insertedRow(rowId, columns, checked[index] ?? [], meta));
        return batch ? { batch: true as const, rows: out } : { batch: false as const, row: out[0] as ApiRow };
      });
    },

    async update(orgId: string, tableId: string, rowId: string, body: unknown, actor: string) {
      return withLockedTable(orgId, tableId, async (trx, table) => {
        const sets = checkRowPatch(columnsByName(table.columns), body, 'body');
        const record =
          sets.length === 0
            ? await rows.findRow(trx, table.id, table.columns, rowId)
            : await rows.updateRow(trx, table.id, table.columns, rowId, sets, actor);
        if (!record) throw rowNotFound();
        return toRow(table.columns, record);
      });
    },

    async updateMany(orgId: string, tableId: string, input: { filter?: unknown; update?: unknown }, actor: string) {
      const filter = requireFilter(input.filter);
      if (input.update === undefined) throw badRequest('update is required');
      return withLockedTable(orgId, tableId, async (trx, table) => {
        const where = compileFilter(filter, tableFields(table.columns));
        const sets = checkRowPatch(columnsByName(table.columns), input.update, 'update');
        if (sets.length === 0) throw badRequest('update must name at least one column');
        await checkBulkUpdateSize(trx, table, where, sets);
        return { updated: await rows.updateWhere(trx, table.id, where, sets, actor) };
      });
    },

    async remove(orgId: string, tableId: string, rowId: string) {
      await withLockedTable(orgId, tableId, async (trx, table) => {
        if (!(await rows.deleteRow(trx, table.id, rowId))) throw rowNotFound();
        await repo.adjustRowCount(trx, table.id, -1);
      });
    },

    async removeMany(orgId: string, tableId: string, input: { filter?: unknown }) {
      const filter = requireFilter(input.filter);
      return withLockedTable(orgId, tableId, async (trx, table) => {
        const where = compileFilter(filter, tableFields(table.columns));
        await checkBulkDeleteSize(trx, table, where);
        const deleted = await rows.deleteWhere(trx, table.id, where);
        if (deleted > 0) await repo.adjustRowCount(trx, table.id, -deleted);
        return { deleted };
      });
    },
  };
}

export type RowService = ReturnType<typeof createRowService>;
