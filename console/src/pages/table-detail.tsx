import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { type ColumnDraft, ColumnsEditor, fromColumns, toColumnInputs } from '../components/columns-editor.js';
import { DetailHeader } from '../components/detail-header.js';
import { emptyGroup, FilterBuilder, type Group, toFilter } from '../components/filter-builder.js';
import { RowForm } from '../components/row-form.js';
import { type GridQuery, type Row, RowGrid } from '../components/row-grid.js';
import { ErrorText } from '../components/ui.js';
import { navigate } from '../router.js';
import { useSession } from '../session.js';

export function TableDetail({ id }: { id: string }) {
  const { client } = useSession();
  const queries = useQueryClient();
  const table = useQuery({
    queryKey: ['table', id],
    queryFn: () => unwrap(client.GET('/v1/tables/{id}', { params: { path: { id } } })),
  });
  const [draftFilter, setDraftFilter] = useState<Group>(emptyGroup);
  const [query, setQuery] = useState<GridQuery>({ filter: null, sortBy: 'created_at', direction: 'desc' });
  const [editing, setEditing] = useState<Row | null>(null);
  const [columns, setColumns] = useState<ColumnDraft[] | null>(null);
  const path = { params: { path: { id } } };
  const refresh = () => {
    void queries.invalidateQueries({ queryKey: ['rows', id] });
    void queries.invalidateQueries({ queryKey: ['table', id] });
  };
  const insert = useMutation({
    mutationFn: (values: Record<string, unknown>) =>
      unwrap(client.POST('/v1/tables/{id}/rows', { ...path, body: values })),
    onSuccess: refresh,
  });
  const update = useMutation({
    mutationFn: ({ rowId, values }: { rowId: string; values: Record<string, unknown> }) =>
      unwrap(client.PATCH('/v1/tables/{id}/rows/{rowId}', { params: { path: { id, rowId } }, body: values })),
    onSuccess: () => {
      setEditing(null);
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (rowId: string) =>
      unwrap(client.DELETE('/v1/tables/{id}/rows/{rowId}', { params: { path: { id, rowId } } })),
    onSuccess: () => {
      setEditing(null);
      refresh();
    },
  });
  const saveColumns = useMutation({
    mutationFn: (drafts: ColumnDraft[]) =>
      unwrap(client.PATCH('/v1/tables/{id}', { ...path, body: { columns: toColumnInputs(drafts) } })),
    onSuccess: () => {
      setColumns(null);
      refresh();
    },
  });
  const dropTable = useMutation({
    mutationFn: () => unwrap(client.DELETE('/v1/tables/{id}', path)),
    onSuccess: () => {
      void queries.invalidateQueries({ queryKey: ['tables'] });
      navigate('tables');
    },
  });
  const data = table.data;
  if (!data) return <ErrorText error={table.error} />;
  const sort = (column: string) =>
    setQuery((previous) => ({
      ...previous,
      sortBy: column,
      direction: previous.sortBy === column && previous.direction === 'asc' ? 'desc' : 'asc',
    }));
  return (
    <>
      <DetailHeader back={{ page: 'tables', label: 'Tables' }} title={data.name} />
      {data.description ? <p>{data.description}</p> : null}
      <section className="panel" aria-label="Filter rows">
        <FilterBuilder group={draftFilter} columns={data.columns} onChange={setDraftFilter} />
        <button
          type="button"
          onClick={() =>
            setQuery((previous) => ({
              ...previous,
              filter: draftFilter.items.length ? toFilter(draftFilter, data.columns) : null,
            }))
          }
        >
          Apply filter
        </button>
        <button
          type="button"
          onClick={() => {
            setDraftFilter(emptyGroup());
            setQuery((previous) => ({ ...previous, filter: null }));
          }}
        >
          Clear filter
        </button>
      </section>
      <RowGrid tableId={id} columns={data.columns} query={query} onSort={sort} onEdit={setEditing} />
      {editing ? (
        <RowForm
          key={editing.id}
          columns={data.columns}
          row={editing}
          error={update.error ?? remove.error}
          onSave={(values) => update.mutate({ rowId: editing.id, values })}
          onDelete={() => remove.mutate(editing.id)}
          onCancel={() => setEditing(null)}
        />
      ) : (
        <RowForm
          key="new"
          columns={data.columns}
          row={null}
          error={insert.error}
          onSave={(values) => insert.mutate(values)}
        />
      )}
      <section className="panel" aria-label="Columns">
        <h2>Columns</h2>
        {columns ? (
          <>
            <ColumnsEditor columns={columns} onChange={setColumns} />
            <button type="button" onClick={() => saveColumns.mutate(columns)}>
              Save columns
            </button>
            <button type="button" onClick={() => setColumns(null)}>
              Cancel
            </button>
          </>
        ) : (
          <>
            <ul>
              {data.columns.map((column) => (
                <li key={column.name}>
                  <code>{column.name}</code> {column.type}
                  {column.required ? ', required' : ''}
                  {column.options ? ` (${column.options.join(', ')})` : ''}
                </li>
              ))}
            </ul>
            <button type="button" onClick={() => setColumns(fromColumns(data.columns))}>
              Edit columns
            </button>
          </>
        )}
        <ErrorText error={saveColumns.error} />
      </section>
      <button
        type="button"
        className="danger"
        onClick={() => {
          if (window.confirm(`Delete table ${data.name} and all its rows?`)) dropTable.mutate();
        }}
      >
        Delete table
      </button>
      <ErrorText error={dropTable.error} />
    </>
  );
}
