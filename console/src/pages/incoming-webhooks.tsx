import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { DeploymentPicker } from '../components/deployment-picker.js';
import { ErrorText, Field, SecretOnce, When } from '../components/ui.js';
import { useSession } from '../session.js';

export default function IncomingWebhooksPage() {
  const { client } = useSession();
  const queries = useQueryClient();
  const [deploymentId, setDeploymentId] = useState('');
  const [name, setName] = useState('');
  const [environment, setEnvironment] = useState<'production' | 'staging'>('production');
  const list = useQuery({
    queryKey: ['incoming-webhooks'],
    queryFn: () => unwrap(client.GET('/v1/incoming-webhooks', { params: { query: { limit: 200 } } })),
  });
  const refresh = () => void queries.invalidateQueries({ queryKey: ['incoming-webhooks'] });
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        client.POST('/v1/incoming-webhooks', {
          body: { deployment_id: deploymentId, environment, ...(name ? { name } : {}) },
        }),
      ),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (id: string) => unwrap(client.DELETE('/v1/incoming-webhooks/{id}', { params: { path: { id } } })),
    onSuccess: refresh,
  });
  return (
    <>
      <h1>Incoming webhooks</h1>
      <ErrorText error={list.error ?? remove.error} />
      <div className="scroll">
        <table aria-label="Incoming webhooks">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Deployment</th>
              <th scope="col">Environment</th>
              <th scope="col">Created</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.data?.incoming_webhooks.map((hook) => (
              <tr key={hook.id}>
                <td>{hook.name ?? hook.id}</td>
                <td>{hook.deployment_id}</td>
                <td>{hook.environment}</td>
                <td>
                  <When at={hook.created_at} />
                </td>
                <td>
                  <button
                    type="button"
                    aria-label={`Delete ${hook.name ?? hook.id}`}
                    onClick={() => {
                      if (window.confirm('Its URL answers 404 from then on. Delete?')) remove.mutate(hook.id);
                    }}
                  >
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {create.data ? (
        <SecretOnce label="Webhook URL" value={create.data.url} onDone={() => create.reset()} />
      ) : (
        <form
          className="panel"
          aria-label="Create an incoming webhook"
          onSubmit={(event: FormEvent) => {
            event.preventDefault();
            create.mutate();
          }}
        >
          <h2>New incoming webhook</h2>
          <DeploymentPicker value={deploymentId} onChange={setDeploymentId} />
          <Field label="Name">{(id) => <input id={id} value={name} onChange={(e) => setName(e.target.value)} />}</Field>
          <Field label="Environment">
            {(id) => (
              <select
                id={id}
                value={environment}
                onChange={(e) => setEnvironment(e.target.value as typeof environment)}
              >
                <option>production</option>
                <option>staging</option>
              </select>
            )}
          </Field>
          <button type="submit" disabled={create.isPending}>
            Create incoming webhook
          </button>
          <ErrorText error={create.error} />
        </form>
      )}
    </>
  );
}
