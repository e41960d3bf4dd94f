import { type RawBuilder, sql } from 'kysely';
import type { ColumnKind, StoredColumn } from '../db/schema/tables.js';
import { badRequest } from '../errors.js';
import { CASTS } from './columns.js';
import { hasNul, jsonHasNul, parseDatetime, type SqlValue } from './values.js';

export const MAX_FILTER_DEPTH = 5;
export const MAX_FILTER_CONDITIONS = 100;
export const MAX_LIST_VALUES = 1000;

export const OPERATORS = [
  'eq',
  'neq',
  'gt',
  'gte',
  'lt',
  'lte',
  'contains',
  'not_contains',
  'starts_with',
  'ends_with',
  'in',
  'not_in',
  'is_null',
  'is_not_null',
] as const;
export type Operator = (typeof OPERATORS)[number];

/** A filterable, sortable column: a user column or one of `id`, `created_at`, `updated_at`. */
export interface Field {
  name: string;
  type: ColumnKind | 'id';
  /** Physical column name: a generated id, never the user's name. */
  ident: string;
}

const COMPARE: Operator[] = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte'];
const MATCH: Operator[] = ['contains', 'not_contains', 'starts_with', 'ends_with'];
const LISTS: Operator[] = ['in', 'not_in'];
const NULLS: Operator[] = ['is_null', 'is_not_null'];

const ALLOWED: Record<Field['type'], ReadonlySet<Operator>> = {
  text: new Set([...COMPARE, ...MATCH, ...LISTS, ...NULLS]),
  url: new Set([...COMPARE, ...MATCH, ...LISTS, ...NULLS]),
  email: new Set([...COMPARE, ...MATCH, ...LISTS, ...NULLS]),
  id: new Set([...COMPARE, ...MATCH, ...LISTS, ...NULLS]),
  select: new Set(['eq', 'neq', ...MATCH, ...LISTS, ...NULLS]),
  number: new Set([...COMPARE, ...LISTS, ...NULLS]),
  datetime: new Set([...COMPARE, ...LISTS, ...NULLS]),
  boolean: new Set(['eq', 'neq', ...LISTS, ...NULLS]),
  json: new Set(['eq', 'neq', ...NULLS]),
};

/** Operators that apply to a column type, for docs and error messages. */
export function operatorsFor(type: Field['type']): Operator[] {
  return OPERATORS.filter((op) => ALLOWED[type].has(op));
}

/** The fields a table can be filtered and sorted by, keyed by name (a Map: `__proto__` is just a key). */
export function tableFields(columns: StoredColumn[]): Map<string, Field> {
  const fields = new Map<string, Field>([
    ['id', { name: 'id', type: 'id', ident: 'id' }],
    ['created_at', { name: 'created_at', type: 'datetime', ident: 'created_at' }],
    ['updated_at', { name: 'updated_at', type: 'datetime', ident: 'updated_at' }],
  ]);
  for (const column of columns) fields.set(column.name, { name: column.name, type: column.type, ident: column.id });
  return fields;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const hasOwn = (object: object, key: string) => Object.hasOwn(object, key);

/**
 * Compiles a filter (`{and: [...]}` or `{or: [...]}`, groups nested up to 5 deep, at most 100
 * conditions) into a SQL condition. Column names become physical ids and values parameters, so
 * nothing the user wrote becomes SQL text. Throws a 400 naming the place, column and operator.
 */
export function compileFilter(filter: unknown, fields: Map<string, Field>, at = 'filter'): RawBuilder<boolean> {
  const state = { conditions: 0 };
  return compileGroup(filter, fields, at, 1, state);
}

function compileGroup(
  group: unknown,
  fields: Map<string, Field>,
  at: string,
  depth: number,
  state: { conditions: number },
): RawBuilder<boolean> {
  if (!isPlainObject(group) || (!hasOwn(group, 'and') && !hasOwn(group, 'or'))) {
    throw badRequest(`${at}: must be an object with an "and" or an "or" array`);
  }
  const keys = Object.keys(group);
  if (keys.length !== 1) {
    const extra = keys.filter((key) => key !== 'and' && key !== 'or');
    throw badRequest(
      extra.length > 0
        ? `${at}: unknown field "${extra[0]}" in a group`
        : `${at}: a group takes either "and" or "or", not both`,
    );
  }
  if (depth > MAX_FILTER_DEPTH) throw badRequest(`${at}: groups may nest at most ${MAX_FILTER_DEPTH} levels deep`);
  const kind = keys[0] as 'and' | 'or';
  const items = group[kind];
  if (!Array.isArray(items)) throw badRequest(`${at}.${kind}: must be an array`);
  const parts = items.map((item, index) => {
    const where = `${at}.${kind}[${index}]`;
    if (isPlainObject(item) && (hasOwn(item, 'and') || hasOwn(item, 'or'))) {
      return compileGroup(item, fields, where, depth + 1, state);
    }
    state.conditions += 1;
    if (state.conditions > MAX_FILTER_CONDITIONS) {
      throw badRequest(`filter: at most ${MAX_FILTER_CONDITIONS} conditions are allowed`);
    }
    return compileCondition(item, fields, where);
  });
  // An empty `and` matches every row, an empty `or` none, as in logic.
  if (parts.length === 0) return kind === 'and' ? sql<boolean>`true` : sql<boolean>`false`;
  return sql<boolean>`(${sql.join(parts, kind === 'and' ? sql` and ` : sql` or `)})`;
}

function compileCondition(item: unknown, fields: Map<string, Field>, at: string): RawBuilder<boolean> {
  if (!isPlainObject(item)) {
    throw badRequest(`${at}: must be a condition {column, operator, value} or a group {and|or: [...]}`);
  }
  const extra = Object.keys(item).filter((key) => key !== 'column' && key !== 'operator' && key !== 'value');
  if (extra.length > 0) throw badRequest(`${at}: unknown field "${extra[0]}" in a condition`);
  const { column, operator } = item;
  if (typeof column !== 'string') throw badRequest(`${at}.column: must be a string`);
  if (typeof operator !== 'string') throw badRequest(`${at}.operator: must be a string (column "${column}")`);
  const field = fields.get(column);
  if (!field) throw badRequest(`${at}: unknown column "${column}" (operator "${operator}")`);
  if (!(OPERATORS as readonly string[]).includes(operator)) {
    throw badRequest(
      `${at}: unknown operator "${operator}" (column "${column}"); use one of ${operatorsFor(field.type).join(', ')}`,
    );
  }
  const op = operator as Operator;
  if (!ALLOWED[field.type].has(op)) {
    throw badRequest(
      `${at}: operator "${op}" does not apply to column "${column}" of type ${typeName(field)}; ` +
        `use one of ${operatorsFor(field.type).join(', ')}`,
    );
  }
  const ref = sql.id(field.ident);
  const value = hasOwn(item, 'value') ? item.value : undefined;
  const where = `${at}.value`;
  const describe = `operator "${op}" on column "${column}" (${typeName(field)})`;

  if (op === 'is_null' || op === 'is_not_null') {
    if (value !== undefined && value !== null) throw badRequest(`${where}: ${describe} takes no value`);
    return op === 'is_null' ? sql<boolean>`${ref} is null` : sql<boolean>`${ref} is not null`;
  }
  if (value === undefined) throw badRequest(`${where}: ${describe} needs a value`);

  if (op === 'in' || op === 'not_in') {
    if (!Array.isArray(value)) throw badRequest(`${where}: ${describe} needs an array`);
    if (value.length > MAX_LIST_VALUES) {
      throw badRequest(`${where}: ${describe} takes at most ${MAX_LIST_VALUES} values`);
    }
    const withNull = value.some((member) => member === null);
    const members = value.filter((member) => member !== null).map((member) => toParam(field, member, where, describe));
    const list = sql`${members}::${sql.raw(castOf(field))}[]`;
    if (op === 'in') {
      if (members.length === 0) return withNull ? sql<boolean>`${ref} is null` : sql<boolean>`false`;
      return withNull ? sql<boolean>`(${ref} = any(${list}) or ${ref} is null)` : sql<boolean>`${ref} = any(${list})`;
    }
    // not_in matches nulls, unless null is itself in the list.
    if (members.length === 0) return withNull ? sql<boolean>`${ref} is not null` : sql<boolean>`true`;
    return withNull
      ? sql<boolean>`(${ref} is not null and ${ref} <> all(${list}))`
      : sql<boolean>`(${ref} is null or ${ref} <> all(${list}))`;
  }

  if (value === null) {
    if (op === 'eq') return sql<boolean>`${ref} is null`;
    if (op === 'neq') return sql<boolean>`${ref} is not null`;
    throw badRequest(`${where}: ${describe} needs a non-null value`);
  }

  if (MATCH.includes(op)) {
    if (typeof value !== 'string') throw badRequest(`${where}: ${describe} needs a string`);
    if (hasNul(value)) throw badRequest(`${where}: must not contain the NUL character (\\u0000)`);
    const escaped = value.replace(/[\\%_]/g, (char) => `\\${char}`);
    const pattern = op === 'starts_with' ? `${escaped}%` : op === 'ends_with' ? `%${escaped}` : `%${escaped}%`;
    if (op === 'not_contains') return sql<boolean>`(${ref} is null or ${ref} not ilike ${pattern})`;
    return sql<boolean>`${ref} ilike ${pattern}`;
  }

  const param = sql`${toParam(field, value, where, describe)}::${sql.raw(castOf(field))}`;
  switch (op) {
    case 'eq':
      return sql<boolean>`${ref} = ${param}`;
    case 'neq':
      // neq matches nulls too.
      return sql<boolean>`${ref} is distinct from ${param}`;
    case 'gt':
      return sql<boolean>`${ref} > ${param}`;
    case 'gte':
      return sql<boolean>`${ref} >= ${param}`;
    case 'lt':
      return sql<boolean>`${ref} < ${param}`;
    default:
      return sql<boolean>`${ref} <= ${param}`;
  }
}

function typeName(field: Field): string {
  return field.type === 'id' ? 'text' : field.type;
}

function castOf(field: Field): string {
  return field.type === 'id' ? 'text' : CASTS[field.type];
}

/** A filter value checked against the column type, as a parameter. */
function toParam(field: Field, value: unknown, where: string, describe: string): SqlValue {
  switch (field.type) {
    case 'number':
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      throw badRequest(`${where}: ${describe} needs a finite number`);
    case 'boolean':
      if (typeof value === 'boolean') return value;
      throw badRequest(`${where}: ${describe} needs true or false`);
    case 'datetime': {
      const iso = typeof value === 'string' ? parseDatetime(value) : undefined;
      if (iso) return iso;
      throw badRequest(`${where}: ${describe} needs an ISO 8601 date-time string`);
    }
    case 'json':
      if (jsonHasNul(value)) throw badRequest(`${where}: must not contain the NUL character (\\u0000)`);
      return JSON.stringify(value);
    default:
      if (typeof value !== 'string') throw badRequest(`${where}: ${describe} needs a string`);
      if (hasNul(value)) throw badRequest(`${where}: must not contain the NUL character (\\u0000)`);
      return value;
  }
}
