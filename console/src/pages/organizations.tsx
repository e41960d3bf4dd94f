import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { ShownOnce } from '../components/secret-once.js';
import { ErrorText, Field, When } from '../components/ui.js';
import { useSession } from '../session.js';

/** Organizations: admin keys of organization `default` only; others see the API's 403 message. */
export default function OrganizationsPage() {
  const { client } = useSession();
  const queries = useQueryClient();
  const [name, setName] = useState('');
  const organizations = useQuery({
    queryKey: ['organizations'],
    queryFn: () => unwrap(client.GET('/v1/organizations')),
  });
  const create = useMutation({
    mutationFn: () => unwrap(client.POST('/v1/organizations', { body: { name } })),
    onSuccess: () => {
      setName('');
      void queries.invalidateQueries({ queryKey: ['organizations'] });
    },
  });
  return (
    <>
      <h1>Organizations</h1>
      <ErrorText error={organizations.error} />
      <ul aria-label="Organizations">
        {organizations.data?.organizations.map((organization) => (
          <li key={organization.id}>
            {organization.name} <code>{organization.id}</code> <When at={organization.created_at} />
          </li>
        ))}
      </ul>
      <ShownOnce
        created={create}
        secret={(created) => ({ label: `Admin key of ${created.name}`, value: created.api_key.key })}
      >
        <form
          className="panel inline"
          aria-label="Create an organization"
          onSubmit={(event: FormEvent) => {
            event.preventDefault();
            create.mutate();
          }}
        >
          <Field label="Organization name">
            {(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <button type="submit" disabled={create.isPending}>
            Create organization
          </button>
          <ErrorText error={create.error} />
        </form>
      </ShownOnce>
    </>
  );
}
