import { type RawBuilder, sql } from 'kysely';
import { jsonObject } from './schemas.js';

/** The comparison operators of LangGraph's store filters. */
const OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte']);
const NUMERIC: Record<string, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** What is wrong with a filter's operators, or null: an unknown one, a bound that is not a number. */
function operatorProblem(filter: Record<string, unknown>, path: string[]): string | null {
  for (const [key, expected] of Object.entries(filter)) {
    if (!isPlainObject(expected)) continue;
    const at = [...path, key].join('.');
    if (!Object.keys(expected).some((name) => name.startsWith('$'))) {
      const nested = operatorProblem(expected, [...path, key]);
      if (nested) return nested;
      continue;
    }
    for (const [name, operand] of Object.entries(expected)) {
      if (!OPERATORS.has(name)) {
        return `${at}: unknown operator ${name}; a filter compares with $eq, $ne, $gt, $gte, $lt or $lte`;
      }
      if (NUMERIC[name] && (typeof operand !== 'number' || !Number.isFinite(operand))) {
        return `${at}: ${name} compares numbers; give it a number, not ${JSON.stringify(operand)}`;
      }
    }
  }
  return null;
}

/** A search's `filter` field (POST /store/items/search, a graph's store.search): its operators checked. */
export const storeFilterSchema = jsonObject
  .superRefine((filter, ctx) => {
    const problem = operatorProblem(filter, []);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .nullish()
  .transform((value) => value ?? undefined);

/** The item's value at `path`, JSON null where it has none (as LangGraph's `value.get(key)` gives None). */
function valueAt(path: string[]): RawBuilder<unknown> {
  const steps = path.map((key) => sql`->${key}::text`);
  return sql`coalesce(value${sql.join(steps, sql``)}, 'null'::jsonb)`;
}

const all = (conditions: RawBuilder<boolean>[]): RawBuilder<boolean> =>
  conditions.length === 0 ? sql<boolean>`true` : sql<boolean>`(${sql.join(conditions, sql` and `)})`;

function operatorCondition(at: RawBuilder<unknown>, name: string, operand: unknown): RawBuilder<boolean> {
  const symbol = NUMERIC[name];
  if (symbol) {
    const compared = sql`(${at} #>> '{}')::float8 ${sql.raw(symbol)} ${operand}::float8`;
    return sql<boolean>`(case when jsonb_typeof(${at}) = 'number' then ${compared} else false end)`;
  }
  const json = JSON.stringify(operand);
  return name === '$eq' ? sql<boolean>`${at} = ${json}::jsonb` : sql<boolean>`${at} <> ${json}::jsonb`;
}

function matches(path: string[], expected: unknown): RawBuilder<boolean> {
  const at = valueAt(path);
  if (!isPlainObject(expected)) return sql<boolean>`${at} = ${JSON.stringify(expected)}::jsonb`;
  const entries = Object.entries(expected);
  if (entries.some(([name]) => name.startsWith('$'))) {
    return all(entries.map(([name, operand]) => operatorCondition(at, name, operand)));
  }
  return all([
    sql<boolean>`jsonb_typeof(${at}) = 'object'`,
    ...entries.map(([key, value]) => matches([...path, key], value)),
  ]);
}

/**
 * The items whose value matches `filter` as LangGraph's own stores match it (langgraph.store.memory,
 * `_compare_values`): each key's value equals the filter's, a nested object matches key by key, and
 * `{"$gt": 5}` and the like compare (numbers only: a value that is not one matches no bound). A key
 * the item lacks is null. Lists are equal when they are equal as JSON. Checked by storeFilterSchema.
 */
export function storeFilterCondition(filter: Record<string, unknown>): RawBuilder<boolean> {
  return all(Object.entries(filter).map(([key, value]) => matches([key], value)));
}
