import { createHash } from 'node:crypto';
import { INDEXED_TYPES } from './columns.js';
import type { Field } from './filter.js';

/**
 * The index that would answer a query's count from the index alone and its page in order: the
 * columns the filter pins to values (`eq`, `in`, `is_null`), then the sort column when the filter
 * ranges over nothing else (so the page is read in order), else the column it ranges over; every
 * other column the filter reads is carried in `include`, so the count never visits the table.
 */
export interface IndexPlan {
  /** Stable for the same key and include columns: `a_` + 10 hex characters. */
  suffix: string;
  key: string[];
  include: string[];
}

/**
 * Column types an index may hold: fixed-size values, ids, and select options (at most 200
 * characters, so at most 800 bytes). Free text, URLs and JSON are left out: a long value would not
 * fit a b-tree entry, and an index holding one would refuse the insert.
 */
const INDEXABLE: ReadonlySet<Field['type']> = new Set(['number', 'datetime', 'select', 'boolean', 'id']);
/** Three select values of 800 bytes stay under PostgreSQL's b-tree entry limit (2704 bytes). */
const MAX_SELECT_COLUMNS = 3;
const MAX_COLUMNS = 4;

/** Columns indexed from the table's creation (physical.ts): an index on one of them alone adds nothing. */
function alreadyIndexed(field: Field): boolean {
  if (field.ident === 'id' || field.ident === 'created_at') return true;
  return field.ident !== 'updated_at' && field.type !== 'id' && INDEXED_TYPES.has(field.type);
}

const RANGING = new Set(['gt', 'gte', 'lt', 'lte']);

type Role = 'pinned' | 'ranged' | 'read';

interface Shape {
  roles: Map<string, Role>;
  fields: Map<string, Field>;
  indexable: boolean;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const RANK: Record<Role, number> = { read: 0, ranged: 1, pinned: 2 };

function note(shape: Shape, field: Field | undefined, role: Role): void {
  if (!field || !INDEXABLE.has(field.type)) {
    shape.indexable = false;
    return;
  }
  shape.fields.set(field.ident, field);
  const before = shape.roles.get(field.ident);
  if (!before || RANK[role] > RANK[before]) shape.roles.set(field.ident, role);
}

function roleOf({ operator, value }: Record<string, unknown>): Role {
  if (operator === 'is_null') return 'pinned';
  if (operator === 'is_not_null') return 'ranged';
  // `eq null` is `is null`, `neq null` is `is not null`.
  if (value === null) return operator === 'eq' ? 'pinned' : operator === 'neq' ? 'ranged' : 'read';
  // A null in the list makes it `= any(...) or is null`, which no single range of an index holds.
  if (operator === 'in') return Array.isArray(value) && !value.includes(null) ? 'pinned' : 'read';
  if (operator === 'eq') return 'pinned';
  return RANGING.has(operator as string) ? 'ranged' : 'read';
}

/** Conditions of the outer `and` pin or range; anything under an `or` or deeper is only read. */
function walk(shape: Shape, group: unknown, fields: Map<string, Field>, outer: boolean): void {
  if (!isObject(group)) return;
  const kind = Object.hasOwn(group, 'and') ? 'and' : 'or';
  const items = group[kind];
  if (!Array.isArray(items)) return;
  for (const item of items) {
    if (!isObject(item)) continue;
    if (Object.hasOwn(item, 'and') || Object.hasOwn(item, 'or')) {
      walk(shape, item, fields, false);
    } else {
      const role = outer && kind === 'and' ? roleOf(item) : 'read';
      note(shape, fields.get(item.column as string), role);
    }
  }
}

/** True for no filter or `{"and": []}`: every row matches. */
export function matchesAll(filter: unknown): boolean {
  if (filter === undefined || filter === null) return true;
  return isObject(filter) && Array.isArray(filter.and) && filter.and.length === 0;
}

/**
 * The index a query (already checked by compileFilter) would want, or undefined when it needs none
 * (no filter, or one the table's own indexes serve) or cannot have one (it reads a column no index
 * may hold, pins and ranges over nothing, or reads too many columns).
 */
export function indexPlanFor(filter: unknown, fields: Map<string, Field>, sort: Field): IndexPlan | undefined {
  if (matchesAll(filter)) return undefined;
  const shape: Shape = { roles: new Map(), fields: new Map(), indexable: true };
  walk(shape, filter, fields, true);
  if (!shape.indexable) return undefined;
  const withRole = (role: Role) => [...shape.roles].filter(([, r]) => r === role).map(([ident]) => ident);
  const pinned = withRole('pinned').sort();
  const ranged = withRole('ranged').sort();
  // Nothing narrows the rows: the count would read the whole index anyway.
  if (pinned.length === 0 && ranged.length === 0) return undefined;
  const sortable = INDEXABLE.has(sort.type) && !pinned.includes(sort.ident);
  const next = sortable && (ranged.length === 0 || ranged.includes(sort.ident)) ? sort.ident : ranged[0];
  const key = next === undefined ? pinned : [...pinned, next];
  shape.fields.set(sort.ident, sort);
  const include = [...shape.roles.keys()].filter((ident) => !key.includes(ident)).sort();
  const all = [...key, ...include];
  const selects = all.filter((ident) => shape.fields.get(ident)?.type === 'select');
  if (all.length > MAX_COLUMNS || selects.length > MAX_SELECT_COLUMNS) return undefined;
  const only = key.length === 1 && include.length === 0 ? shape.fields.get(key[0] as string) : undefined;
  if (only && alreadyIndexed(only)) return undefined;
  const digest = createHash('sha256')
    .update(JSON.stringify([key, include]))
    .digest('hex');
  return { suffix: `a_${digest.slice(0, 10)}`, key, include };
}
