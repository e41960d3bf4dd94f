import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { ErrorText, Field } from '../components/ui.js';
import { useSession } from '../session.js';

/** Deployment variables (CONTRACTS §8) by name; values go in and are never shown again. */
export function Variables({ deploymentId }: { deploymentId: string }) {
  const { client } = useSession();
  const queries = useQueryClient();
  const path = { params: { path: { id: deploymentId } } };
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const names = useQuery({
    queryKey: ['variables', deploymentId],
    queryFn: () => unwrap(client.GET('/v1/deployments/{id}/variables', path)),
  });
  const put = useMutation({
    mutationFn: (variables: Record<string, string | null>) =>
      unwrap(client.PUT('/v1/deployments/{id}/variables', { ...path, body: { variables } })),
    onSuccess: (result) => {
      setName('');
      setValue('');
      queries.setQueryData(['variables', deploymentId], result);
    },
  });
  return (
    <section className="panel" aria-label="Variables">
      <h2>Variables</h2>
      <ErrorText error={names.error ?? put.error} />
      <ul>
        {names.data?.names.map((variable) => (
          <li key={variable}>
            <code>{variable}</code>{' '}
            <button type="button" aria-label={`Remove ${variable}`} onClick={() => put.mutate({ [variable]: null })}>
              Remove
            </button>
          </li>
        ))}
      </ul>
      <form
        className="inline"
        aria-label="Set a variable"
        onSubmit={(event: FormEvent) => {
          event.preventDefault();
          put.mutate({ [name]: value });
        }}
      >
        <Field label="Variable name">
          {(id) => (
            <input id={id} required pattern="[A-Z_][A-Z0-9_]*" value={name} onChange={(e) => setName(e.target.value)} />
          )}
        </Field>
        <Field label="Value">
          {(id) => <input id={id} type="password" required value={value} onChange={(e) => setValue(e.target.value)} />}
        </Field>
        <button type="submit">Set variable</button>
      </form>
    </section>
  );
}
