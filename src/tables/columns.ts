import type { ColumnKind, StoredColumn } from '../db/schema/tables.js';
import { badRequest } from '../errors.js';
import { newId } from '../ids.js';

/** Names a user column cannot take: the row's own members and the filterable system columns. */
export const RESERVED_COLUMN_NAMES = ['id', '_meta', 'created_at', 'updated_at'] as const;
export const MAX_COLUMNS = 200;
export const MAX_COLUMN_NAME_LENGTH = 100;
export const MAX_OPTIONS = 1000;
export const MAX_OPTION_LENGTH = 200;

/** Physical type of each column type. */
export const SQL_TYPES: Record<ColumnKind, 'text' | 'double precision' | 'boolean' | 'timestamptz' | 'jsonb'> = {
  text: 'text',
  url: 'text',
  email: 'text',
  select: 'text',
  number: 'double precision',
  boolean: 'boolean',
  datetime: 'timestamptz',
  json: 'jsonb',
};

/** Parameter casts, matching SQL_TYPES. */
export const CASTS: Record<ColumnKind, 'text' | 'float8' | 'bool' | 'timestamptz' | 'jsonb'> = {
  text: 'text',
  url: 'text',
  email: 'text',
  select: 'text',
  number: 'float8',
  boolean: 'bool',
  datetime: 'timestamptz',
  json: 'jsonb',
};

/**
 * Types that get a b-tree index: fixed-size values (number, datetime) and select, whose values are
 * bounded options. Free text and JSON are not indexed: a long value would not fit a b-tree entry,
 * and their usual filters (contains, case-insensitive) could not use one anyway.
 */
export const INDEXED_TYPES: ReadonlySet<ColumnKind> = new Set<ColumnKind>(['number', 'datetime', 'select']);

export interface ColumnInput {
  name: string;
  type: ColumnKind;
  required?: boolean | undefined;
  options?: string[] | undefined;
}

export interface PublicColumn {
  name: string;
  type: ColumnKind;
  required: boolean;
  options?: string[];
}

export function toPublicColumn(column: StoredColumn): PublicColumn {
  const out: PublicColumn = { name: column.name, type: column.type, required: column.required };
  if (column.type === 'select') out.options = [...(column.options ?? [])];
  return out;
}

/** Rules zod cannot see across columns: unique names, options only and always for select. */
export function checkColumnInputs(inputs: ColumnInput[]): void {
  const seen = new Set<string>();
  inputs.forEach((input, index) => {
    const at = `columns.${index}`;
    if (seen.has(input.name)) throw badRequest(`${at}.name: duplicate column name "${input.name}"`);
    seen.add(input.name);
    if (input.type === 'select') {
      if (!input.options || input.options.length === 0) {
        throw badRequest(`${at}.options: select column "${input.name}" needs at least one option`);
      }
      const options = new Set<string>();
      for (const option of input.options) {
        if (options.has(option)) throw badRequest(`${at}.options: duplicate option "${option}"`);
        options.add(option);
      }
    } else if (input.options !== undefined) {
      throw badRequest(`${at}.options: only select columns take options (column "${input.name}" is ${input.type})`);
    }
  });
}

/** A new stored column with a fresh physical id. */
export function newStoredColumn(input: ColumnInput): StoredColumn {
  const column: StoredColumn = {
    id: newId('col'),
    name: input.name,
    type: input.type,
    required: input.required ?? false,
  };
  if (input.type === 'select') column.options = [...(input.options ?? [])];
  return column;
}

const SAFE_IDENTIFIER = /^[a-z][a-z0-9_]{0,62}$/;

/** Physical names come only from generated ids; this guards that promise before any DDL or query. */
export function safeIdentifier(name: string): string {
  if (!SAFE_IDENTIFIER.test(name)) throw new Error(`unsafe identifier ${JSON.stringify(name)}`);
  return name;
}

/** Columns by user name; a Map, so names such as `__proto__` are plain keys. */
export function columnsByName(columns: StoredColumn[]): Map<string, StoredColumn> {
  return new Map(columns.map((column) => [column.name, column]));
}
