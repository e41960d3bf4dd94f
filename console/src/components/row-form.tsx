import { type FormEvent, useState } from 'react';
import type { Schemas } from '../../../src/client/index.js';
import type { Row } from './row-grid.js';
import { ErrorText, Field } from './ui.js';

type Drafts = Record<string, string>;

function draftOf(row: Row | null, columns: Schemas['Column'][]): Drafts {
  const drafts: Drafts = {};
  for (const column of columns) {
    const value = row?.[column.name];
    drafts[column.name] =
      value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  }
  return drafts;
}

/** Values typed by their column; an empty field is left out of a new row and set to null on an edit. */
function valuesOf(drafts: Drafts, columns: Schemas['Column'][], editing: boolean): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const column of columns) {
    const text = drafts[column.name] ?? '';
    if (text === '') {
      if (editing) values[column.name] = null;
      continue;
    }
    if (column.type === 'number') values[column.name] = Number(text);
    else if (column.type === 'boolean') values[column.name] = text === 'true';
    else if (column.type === 'json') {
      try {
        values[column.name] = JSON.parse(text);
      } catch {
        throw new Error(`${column.name} is not valid JSON`);
      }
    } else values[column.name] = text;
  }
  return values;
}

export function RowForm({
  columns,
  row,
  onSave,
  onDelete,
  onCancel,
  error,
}: {
  columns: Schemas['Column'][];
  row: Row | null;
  onSave(values: Record<string, unknown>): void;
  onDelete?(): void;
  onCancel?(): void;
  error: unknown;
}) {
  const [drafts, setDrafts] = useState(() => draftOf(row, columns));
  const [invalid, setInvalid] = useState<unknown>(null);
  function submit(event: FormEvent) {
    event.preventDefault();
    try {
      setInvalid(null);
      onSave(valuesOf(drafts, columns, row !== null));
    } catch (failure) {
      setInvalid(failure);
    }
  }
  const set = (name: string, value: string) => setDrafts((previous) => ({ ...previous, [name]: value }));
  return (
    <form className="panel" aria-label={row ? `Edit row ${row.id}` : 'Add a row'} onSubmit={submit}>
      <h2>{row ? `Edit row ${row.id}` : 'Add a row'}</h2>
      <div className="fields">
        {columns.map((column) => (
          <Field key={column.name} label={`${column.name}${column.required ? ' (required)' : ''}`} hint={column.type}>
            {(id) => (
              <ValueInput
                id={id}
                column={column}
                value={drafts[column.name] ?? ''}
                onChange={(v) => set(column.name, v)}
              />
            )}
          </Field>
        ))}
      </div>
      <button type="submit">{row ? 'Save row' : 'Add row'}</button>
      {onDelete ? (
        <button type="button" onClick={onDelete}>
          Delete row
        </button>
      ) : null}
      {onCancel ? (
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      ) : null}
      <ErrorText error={invalid ?? error} />
    </form>
  );
}

function ValueInput({
  id,
  column,
  value,
  onChange,
}: {
  id: string;
  column: Schemas['Column'];
  value: string;
  onChange(value: string): void;
}) {
  if (column.type === 'boolean' || column.type === 'select') {
    const choices = column.type === 'boolean' ? ['true', 'false'] : (column.options ?? []);
    return (
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">—</option>
        {choices.map((choice) => (
          <option key={choice}>{choice}</option>
        ))}
      </select>
    );
  }
  if (column.type === 'json')
    return <textarea id={id} rows={2} value={value} onChange={(e) => onChange(e.target.value)} />;
  const type =
    column.type === 'number' ? 'number' : column.type === 'email' ? 'email' : column.type === 'url' ? 'url' : 'text';
  return (
    <input
      id={id}
      type={type}
      step={column.type === 'number' ? 'any' : undefined}
      placeholder={column.type === 'datetime' ? '2026-01-31T12:00:00Z' : undefined}
      value={value}
      onChange={(e) => onChange(e.target.value)}
    />
  );
}
