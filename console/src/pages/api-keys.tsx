import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { ListTable } from '../components/list-table.js';
import { ShownOnce } from '../components/secret-once.js';
import { ErrorText, Field, When } from '../components/ui.js';
import { useSession } from '../session.js';

export default function ApiKeysPage() {
  const { client } = useSession();
  const queries = useQueryClient();
  const [name, setName] = useState('');
  const [role, setRole] = useState<'admin' | 'member'>('member');
  const keys = useQuery({ queryKey: ['api-keys'], queryFn: () => unwrap(client.GET('/v1/api-keys')) });
  const refresh = () => void queries.invalidateQueries({ queryKey: ['api-keys'] });
  const create = useMutation({
    mutationFn: () => unwrap(client.POST('/v1/api-keys', { body: { name, role } })),
    onSuccess: () => {
      setName('');
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => unwrap(client.DELETE('/v1/api-keys/{id}', { params: { path: { id } } })),
    onSuccess: refresh,
  });
  return (
    <>
      <h1>API keys</h1>
      <ErrorText error={keys.error ?? remove.error} />
      <ListTable
        label="API keys"
        rows={keys.data?.api_keys}
        rowKey={(apiKey) => apiKey.id}
        columns={[
          { header: 'Name', cell: (apiKey) => apiKey.name },
          { header: 'Role', cell: (apiKey) => apiKey.role },
          { header: 'Created', cell: (apiKey) => <When at={apiKey.created_at} /> },
          {
            header: 'Actions',
            cell: (apiKey) => (
              <button
                type="button"
                aria-label={`Delete key ${apiKey.name}`}
                onClick={() => {
                  if (window.confirm(`Delete key ${apiKey.name}? It stops working at once.`)) remove.mutate(apiKey.id);
                }}
              >
                Delete
              </button>
            ),
          },
        ]}
      />
      <ShownOnce created={create} secret={(created) => ({ label: `Key ${created.name}`, value: created.key })}>
        <form
          className="panel inline"
          aria-label="Create an API key"
          onSubmit={(event: FormEvent) => {
            event.preventDefault();
            create.mutate();
          }}
        >
          <Field label="Key name">
            {(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <Field label="Role">
            {(id) => (
              <select id={id} value={role} onChange={(e) => setRole(e.target.value as typeof role)}>
                <option>member</option>
                <option>admin</option>
              </select>
            )}
          </Field>
          <button type="submit" disabled={create.isPending}>
            Create key
          </button>
          <ErrorText error={create.error} />
        </form>
      </ShownOnce>
    </>
  );
}
