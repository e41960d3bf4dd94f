import type { StoredColumn } from '../db/schema/tables.js';
import { badRequest } from '../errors.js';
import type { ColumnSet } from './row-repository.js';
import { checkCell, type SqlValue } from './values.js';

export const MAX_BATCH_ROWS = 1000;

const SYSTEM_MEMBERS = new Set(['id', '_meta', 'created_at', 'updated_at']);

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function unknownMember(key: string, prefix: string) {
  if (SYSTEM_MEMBERS.has(key)) return badRequest(`${prefix}"${key}" is set by the service and cannot be written`);
  return badRequest(`${prefix}unknown column "${key}"`);
}

/**
 * Checks one row object for an insert and returns its values in `columns` order. Keys are read
 * with Object.keys and looked up in a Map, so a column named `__proto__` is an ordinary column.
 */
export function checkInsertRow(
  columns: StoredColumn[],
  indexByName: Map<string, number>,
  body: unknown,
  prefix: string,
): SqlValue[] {
  if (!isPlainObject(body)) {
    throw badRequest(prefix ? `${prefix}must be a row object` : 'body must be a row object or an array of row objects');
  }
  const given: unknown[] = new Array(columns.length);
  for (const key of Object.keys(body)) {
    const index = indexByName.get(key);
    if (index === undefined) throw unknownMember(key, prefix);
    given[index] = body[key];
  }
  const values: SqlValue[] = new Array(columns.length);
  for (let index = 0; index < columns.length; index++) {
    const column = columns[index] as StoredColumn;
    const raw = given[index];
    if (raw === undefined || raw === null) {
      if (column.required) throw badRequest(`${prefix}column "${column.name}" is required`);
      values[index] = null;
      continue;
    }
    const checked = checkCell(column, raw);
    if (!checked.ok) throw badRequest(`${prefix}column "${column.name}" ${checked.reason}`);
    values[index] = checked.value;
  }
  return values;
}

/** Checks a partial row for an update: only the members given are changed. */
export function checkRowPatch(byName: Map<string, StoredColumn>, body: unknown, field: string): ColumnSet[] {
  if (!isPlainObject(body)) throw badRequest(`${field} must be an object of column values`);
  const prefix = field === 'body' ? '' : `${field}: `;
  return Object.keys(body).map((key) => {
    const column = byName.get(key);
    if (!column) throw unknownMember(key, prefix);
    const raw = body[key];
    if (raw === null || raw === undefined) {
      if (column.required) throw badRequest(`${prefix}column "${column.name}" is required and cannot be null`);
      return { column, value: null };
    }
    const checked = checkCell(column, raw);
    if (!checked.ok) throw badRequest(`${prefix}column "${column.name}" ${checked.reason}`);
    return { column, value: checked.value };
  });
}
