import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { type ColumnDraft, ColumnsEditor, toColumnInputs } from '../components/columns-editor.js';
import { ListTable } from '../components/list-table.js';
import { ErrorText, Field, When } from '../components/ui.js';
import { href, navigate } from '../router.js';
import { useSession } from '../session.js';
import { TableDetail } from './table-detail.js';

export default function TablesPage({ params }: { params: string[] }) {
  if (params[0]) return <TableDetail key={params[0]} id={params[0]} />;
  return <TableList />;
}

function TableList() {
  const { client } = useSession();
  const queries = useQueryClient();
  const [name, setName] = useState('');
  const [columns, setColumns] = useState<ColumnDraft[]>([{ name: '', type: 'text', required: false, options: '' }]);
  const tables = useQuery({
    queryKey: ['tables'],
    queryFn: () => unwrap(client.GET('/v1/tables', { params: { query: { limit: 200 } } })),
  });
  const create = useMutation({
    mutationFn: () => unwrap(client.POST('/v1/tables', { body: { name, columns: toColumnInputs(columns) } })),
    onSuccess: (table) => {
      void queries.invalidateQueries({ queryKey: ['tables'] });
      navigate('tables', table.id);
    },
  });
  return (
    <>
      <h1>Tables</h1>
      <ErrorText error={tables.error} />
      <ListTable
        label="Tables"
        rows={tables.data?.tables}
        rowKey={(table) => table.id}
        columns={[
          { header: 'Name', cell: (table) => <a href={href('tables', table.id)}>{table.name}</a> },
          { header: 'Rows', cell: (table) => table.row_count },
          { header: 'Columns', cell: (table) => table.columns.map((column) => column.name).join(', ') },
          { header: 'Updated', cell: (table) => <When at={table.updated_at} /> },
        ]}
      />
      <form
        className="panel"
        aria-label="Create a table"
        onSubmit={(event: FormEvent) => {
          event.preventDefault();
          create.mutate();
        }}
      >
        <h2>New table</h2>
        <Field label="Table name">
          {(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <ColumnsEditor columns={columns} onChange={setColumns} />
        <button type="submit" disabled={create.isPending}>
          Create table
        </button>
        <ErrorText error={create.error} />
      </form>
    </>
  );
}
