import { z } from 'zod';
import { COLUMN_TYPES } from '../db/schema/tables.js';
import { isoDate, paginationQuery } from '../http/pagination.js';
import {
  MAX_COLUMN_NAME_LENGTH,
  MAX_COLUMNS,
  MAX_OPTION_LENGTH,
  MAX_OPTIONS,
  RESERVED_COLUMN_NAMES,
} from './columns.js';
import { OPERATORS } from './filter.js';

const columnType = z.enum(COLUMN_TYPES);

export const columnSchema = z
  .object({
    name: z.string(),
    type: columnType,
    required: z.boolean(),
    options: z.array(z.string()).optional().describe('the allowed choices; present for select columns'),
  })
  .meta({ id: 'Column' });

export const tableSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    columns: z.array(columnSchema),
    row_count: z.number().int(),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .meta({ id: 'Table' });

const hasControl = (text: string) => [...text].some((char) => char.charCodeAt(0) < 32 || char.charCodeAt(0) === 127);

const columnName = z
  .string()
  .min(1, 'must not be empty')
  .max(MAX_COLUMN_NAME_LENGTH, `must be at most ${MAX_COLUMN_NAME_LENGTH} characters`)
  .refine((name) => !hasControl(name), 'must not contain control characters')
  .refine(
    (name) => !(RESERVED_COLUMN_NAMES as readonly string[]).includes(name),
    `is reserved (${RESERVED_COLUMN_NAMES.join(', ')} are system members of a row)`,
  );

export const columnInput = z
  .strictObject({
    name: columnName,
    type: columnType,
    required: z.boolean().optional(),
    options: z
      .array(
        z
          .string()
          .min(1, 'must not be empty')
          .max(MAX_OPTION_LENGTH, `must be at most ${MAX_OPTION_LENGTH} characters`)
          .refine((option) => !option.includes('\u0000'), 'must not contain the NUL character'),
      )
      .max(MAX_OPTIONS, `must have at most ${MAX_OPTIONS} options`)
      .optional(),
  })
  .describe('a column definition');

const columnInputs = z.array(columnInput).max(MAX_COLUMNS, `must have at most ${MAX_COLUMNS} columns`);

const tableName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .refine((name) => !name.includes('\u0000'), 'must not contain the NUL character');

const description = z
  .string()
  .max(10_000, 'must be at most 10000 characters')
  .refine((text) => !text.includes('\u0000'), 'must not contain the NUL character');

export const createTableBody = z
  .strictObject({
    name: tableName,
    description: description.nullable().optional(),
    columns: columnInputs,
  })
  .meta({
    examples: [
      {
        name: 'leads',
        columns: [
          { name: 'email', type: 'email', required: true },
          { name: 'score', type: 'number' },
          { name: 'stage', type: 'select', options: ['new', 'won', 'lost'] },
        ],
      },
    ],
  });

export const updateTableBody = z.strictObject({
  name: tableName.optional(),
  description: description.nullable().optional().describe('null clears it'),
  columns: columnInputs
    .optional()
    .describe('a full replacement, matched by name: left-out columns are dropped, types converted'),
});

export const tableParams = z.object({ id: z.string() });
export const rowParams = z.object({ id: z.string(), rowId: z.string() });
export const listTablesQuery = z.strictObject(paginationQuery(50));

export const tableListSchema = z.object({
  tables: z.array(tableSchema),
  limit: z.number().int().describe('the limit used'),
  offset: z.number().int(),
});

export const successSchema = z.object({ success: z.literal(true) });

/**
 * Rows have one member per user column, so their shape is the table's; they are built from the
 * column definitions (an allow-list by construction) and pass through untouched, which keeps a
 * column named `__proto__` intact.
 */
export const rowSchema = z.unknown().meta({
  id: 'Row',
  description: 'id, one member per column (named as the column), and _meta',
  type: 'object',
  properties: {
    id: { type: 'string' },
    _meta: {
      type: 'object',
      properties: {
        created_at: { type: 'string' },
        created_by: { type: 'string' },
        updated_at: { type: 'string' },
        updated_by: { type: 'string' },
      },
    },
  },
  additionalProperties: true,
});

export const rowValuesSchema = z.unknown().meta({
  id: 'RowValues',
  description: 'column name → value; checked against the column definitions',
  type: 'object',
  additionalProperties: true,
});

/** The operators a condition can use; the console's filter builder takes its list from this schema's type. */
export const filterOperatorSchema = z.enum(OPERATORS).meta({
  id: 'FilterOperator',
  description: 'which operators a column takes depends on its type; `in` and `not_in` take a list',
});

export const filterConditionSchema = z
  .object({
    column: z.string().describe('a column name, or id, created_at, updated_at'),
    operator: filterOperatorSchema,
    value: z.unknown().optional().describe('absent for is_null and is_not_null'),
  })
  .meta({ id: 'FilterCondition' });

const filterItems = {
  type: 'array',
  items: { oneOf: [{ $ref: '#/components/schemas/FilterCondition' }, { $ref: '#/components/schemas/Filter' }] },
};

/** Checked by compileFilter (its messages name the faulty condition), so zod takes it as it is. */
export const filterSchema = z.unknown().meta({
  id: 'Filter',
  description:
    '{"and": [...]} or {"or": [...]}; an item is a condition {column, operator, value} or another group ' +
    `(at most 5 levels, 100 conditions). Operators: ${OPERATORS.join(', ')}.`,
  type: 'object',
  properties: { and: filterItems, or: filterItems },
  minProperties: 1,
  maxProperties: 1,
  additionalProperties: false,
});

const limit = z
  .number({ message: 'must be a number' })
  .int('must be an integer')
  .min(0, 'must not be negative')
  .default(50)
  .transform((value) => Math.min(value, 1000))
  .describe('default 50, at most 1000 (larger values are clamped)');

export const queryBody = z
  .strictObject({
    filter: filterSchema.optional(),
    sort_by: z.string().optional().describe('a column name, or id, created_at, updated_at; default created_at'),
    sort_direction: z.enum(['asc', 'desc']).default('desc'),
    limit,
    offset: z
      .number({ message: 'must be a number' })
      .int('must be an integer')
      .min(0, 'must not be negative')
      .default(0),
  })
  .meta({
    examples: [{ filter: { and: [{ column: 'score', operator: 'gte', value: 50 }] }, sort_by: 'score', limit: 100 }],
  })
  .nullish();

export const queryResultSchema = z.object({
  rows: z.array(rowSchema),
  total: z.number().int().describe('rows matching the filter'),
  limit: z.number().int().describe('the limit used'),
  offset: z.number().int(),
});

export const insertBody = z.unknown().meta({
  id: 'RowInsert',
  description: 'a row object, or an array of 1 to 1000 row objects (all or nothing)',
  oneOf: [
    { type: 'object', additionalProperties: true },
    { type: 'array', items: { type: 'object', additionalProperties: true }, minItems: 1, maxItems: 1000 },
  ],
});

export const insertedRowsSchema = z.object({ rows: z.array(rowSchema) });

export const bulkUpdateBody = z.strictObject({ filter: filterSchema, update: rowValuesSchema });
export const bulkDeleteBody = z.strictObject({ filter: filterSchema });
export const updatedSchema = z.object({ updated: z.number().int() });
export const deletedSchema = z.object({ deleted: z.number().int() });
