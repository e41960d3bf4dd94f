import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { DeploymentPicker } from '../components/deployment-picker.js';
import { ListTable } from '../components/list-table.js';
import { DeploymentName } from '../components/names.js';
import { ShownOnce } from '../components/secret-once.js';
import { ErrorText, Field, When } from '../components/ui.js';
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
      <ListTable
        label="Incoming webhooks"
        rows={list.data?.incoming_webhooks}
        rowKey={(hook) => hook.id}
        columns={[
          { header: 'Name', cell: (hook) => <span title={hook.id}>{hook.name ?? hook.id}</span> },
          { header: 'Deployment', cell: (hook) => <DeploymentName id={hook.deployment_id} /> },
          { header: 'Environment', cell: (hook) => hook.environment },
          { header: 'Created', cell: (hook) => <When at={hook.created_at} /> },
          {
            header: 'Actions',
            cell: (hook) => (
              <button
                type="button"
                aria-label={`Delete ${hook.name ?? hook.id}`}
                onClick={() => {
                  if (window.confirm('Its URL answers 404 from then on. Delete?')) remove.mutate(hook.id);
                }}
              >
                Delete
              </button>
            ),
          },
        ]}
      />
      <ShownOnce created={create} secret={(created) => ({ label: 'Webhook URL', value: created.url })}>
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
      </ShownOnce>
    </>
  );
}
