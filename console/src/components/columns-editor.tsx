import type { Schemas } from '../../../src/client/index.js';

export const COLUMN_TYPES = ['text', 'number', 'boolean', 'datetime', 'select', 'url', 'email', 'json'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];
export interface ColumnDraft {
  name: string;
  type: ColumnType;
  required: boolean;
  /** Comma-separated choices of a select column. */
  options: string;
}

export function toColumnInputs(columns: ColumnDraft[]) {
  return columns
    .filter((column) => column.name.trim() !== '')
    .map((column) => ({
      name: column.name.trim(),
      type: column.type,
      required: column.required,
      ...(column.type === 'select'
        ? {
            options: column.options
              .split(',')
              .map((option) => option.trim())
              .filter(Boolean),
          }
        : {}),
    }));
}

export function fromColumns(columns: Schemas['Column'][]): ColumnDraft[] {
  return columns.map((column) => ({
    name: column.name,
    type: column.type as ColumnType,
    required: column.required,
    options: (column.options ?? []).join(', '),
  }));
}

/** Column definitions as editable rows; every input is labelled with its column's position. */
export function ColumnsEditor({ columns, onChange }: { columns: ColumnDraft[]; onChange(next: ColumnDraft[]): void }) {
  const update = (index: number, change: Partial<ColumnDraft>) =>
    onChange(columns.map((column, at) => (at === index ? { ...column, ...change } : column)));
  return (
    <fieldset className="columns">
      <legend>Columns</legend>
      {columns.map((column, index) => (
        // Columns have no id of their own until saved; their position is their identity while editing.
        // biome-ignore lint/suspicious/noArrayIndexKey: see above
        <div className="row" key={index}>
          <input
            aria-label={`Column ${index + 1} name`}
            value={column.name}
            onChange={(e) => update(index, { name: e.target.value })}
          />
          <select
            aria-label={`Column ${index + 1} type`}
            value={column.type}
            onChange={(e) => update(index, { type: e.target.value as ColumnType })}
          >
            {COLUMN_TYPES.map((type) => (
              <option key={type}>{type}</option>
            ))}
          </select>
          <label>
            <input
              type="checkbox"
              checked={column.required}
              onChange={(e) => update(index, { required: e.target.checked })}
            />{' '}
            required
            <span className="visually-hidden"> (column {index + 1})</span>
          </label>
          {column.type === 'select' ? (
            <input
              aria-label={`Column ${index + 1} options (comma-separated)`}
              value={column.options}
              onChange={(e) => update(index, { options: e.target.value })}
            />
          ) : null}
          <button
            type="button"
            aria-label={`Remove column ${index + 1}`}
            onClick={() => onChange(columns.filter((_, at) => at !== index))}
          >
            ✕
          </button>
        </div>
      ))}
      <button
        type="button"
        onClick={() => onChange([...columns, { name: '', type: 'text', required: false, options: '' }])}
      >
        Add column
      </button>
    </fieldset>
  );
}
