import type { Schemas } from '../../../src/client/index.js';

export interface Condition {
  kind: 'condition';
  column: string;
  operator: Operator;
  value: string;
}
export interface Group {
  kind: 'group';
  op: 'and' | 'or';
  items: (Condition | Group)[];
}

type Operator = Schemas['FilterOperator'];

/**
 * The API's filter operators, in menu order. Their type is the generated client's `FilterOperator` (from the
 * route schemas), and a record must name each member once: when the API gains or loses an operator,
 * `npm run check` fails here until the menu follows.
 */
const MENU: Record<Operator, true> = {
  eq: true,
  neq: true,
  gt: true,
  gte: true,
  lt: true,
  lte: true,
  contains: true,
  not_contains: true,
  starts_with: true,
  ends_with: true,
  in: true,
  not_in: true,
  is_null: true,
  is_not_null: true,
};
const OPERATORS = Object.keys(MENU) as Operator[];
const NO_VALUE = new Set<Operator>(['is_null', 'is_not_null']);
const MAX_DEPTH = 5;
const SYSTEM_COLUMNS = ['id', 'created_at', 'updated_at'];

export const emptyGroup = (): Group => ({ kind: 'group', op: 'and', items: [] });

/** The filter of CONTRACTS §5 from the builder's state; values typed by their column. */
export function toFilter(group: Group, columns: Schemas['Column'][]): Record<string, unknown> {
  return {
    [group.op]: group.items.map((item) => {
      if (item.kind === 'group') return toFilter(item, columns);
      const type = columns.find((column) => column.name === item.column)?.type ?? 'text';
      const condition: Record<string, unknown> = { column: item.column, operator: item.operator };
      if (NO_VALUE.has(item.operator)) return condition;
      condition.value =
        item.operator === 'in' || item.operator === 'not_in'
          ? item.value.split(',').map((part) => typed(part.trim(), type))
          : typed(item.value, type);
      return condition;
    }),
  };
}

function typed(text: string, type: string): unknown {
  if (type === 'number') return text.trim() === '' ? text : Number(text);
  if (type === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  if (type === 'json') {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

/** Nested and/or groups of conditions, up to five levels, every control named by its path. */
export function FilterBuilder({
  group,
  columns,
  onChange,
  path = 'Filter',
  depth = 1,
}: {
  group: Group;
  columns: Schemas['Column'][];
  onChange(next: Group): void;
  path?: string;
  depth?: number;
}) {
  const names = [...columns.map((column) => column.name), ...SYSTEM_COLUMNS];
  const replace = (index: number, item: Condition | Group) =>
    onChange({ ...group, items: group.items.map((current, at) => (at === index ? item : current)) });
  const remove = (index: number) => onChange({ ...group, items: group.items.filter((_, at) => at !== index) });
  return (
    <fieldset className="filter-group">
      <legend>{path}</legend>
      <select
        aria-label={`${path}: match`}
        value={group.op}
        onChange={(e) => onChange({ ...group, op: e.target.value as Group['op'] })}
      >
        <option value="and">all of (and)</option>
        <option value="or">any of (or)</option>
      </select>
      {group.items.map((item, index) => {
        const label = `${path} ${index + 1}`;
        if (item.kind === 'group') {
          return (
            <div key={label} className="nested">
              <FilterBuilder
                group={item}
                columns={columns}
                path={`${label}`}
                depth={depth + 1}
                onChange={(next) => replace(index, next)}
              />
              <button type="button" aria-label={`Remove ${label}`} onClick={() => remove(index)}>
                Remove group
              </button>
            </div>
          );
        }
        return (
          <div key={label} className="row condition">
            <select
              aria-label={`${label} column`}
              value={item.column}
              onChange={(e) => replace(index, { ...item, column: e.target.value })}
            >
              {names.map((name) => (
                <option key={name}>{name}</option>
              ))}
            </select>
            <select
              aria-label={`${label} operator`}
              value={item.operator}
              onChange={(e) => replace(index, { ...item, operator: e.target.value as Operator })}
            >
              {OPERATORS.map((operator) => (
                <option key={operator}>{operator}</option>
              ))}
            </select>
            {NO_VALUE.has(item.operator) ? null : (
              <input
                aria-label={`${label} value`}
                value={item.value}
                onChange={(e) => replace(index, { ...item, value: e.target.value })}
              />
            )}
            <button type="button" aria-label={`Remove ${label}`} onClick={() => remove(index)}>
              ✕
            </button>
          </div>
        );
      })}
      <div className="row">
        <button
          type="button"
          aria-label={`${path}: add condition`}
          onClick={() =>
            onChange({
              ...group,
              items: [...group.items, { kind: 'condition', column: names[0] ?? 'id', operator: 'eq', value: '' }],
            })
          }
        >
          Add condition
        </button>
        {depth < MAX_DEPTH ? (
          <button
            type="button"
            aria-label={`${path}: add group`}
            onClick={() => onChange({ ...group, items: [...group.items, emptyGroup()] })}
          >
            Add group
          </button>
        ) : null}
      </div>
    </fieldset>
  );
}
