import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { DeploymentPicker } from '../components/deployment-picker.js';
import { ListTable } from '../components/list-table.js';
import { DeploymentName } from '../components/names.js';
import { ShownOnce } from '../components/secret-once.js';
import { ErrorText, Field, When } from '../components/ui.js';
import { href } from '../router.js';
import { useSession } from '../session.js';
import { WebhookDetail } from './webhook-detail.js';

const EVENTS = ['run.succeeded', 'run.failed'] as const;

export default function WebhooksPage({ params }: { params: string[] }) {
  if (params[0]) return <WebhookDetail key={params[0]} id={params[0]} />;
  return <WebhookList />;
}

function WebhookList() {
  const { client } = useSession();
  const queries = useQueryClient();
  const webhooks = useQuery({
    queryKey: ['webhooks'],
    queryFn: () => unwrap(client.GET('/v1/webhooks', { params: { query: { limit: 200 } } })),
  });
  const [deploymentId, setDeploymentId] = useState('');
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>([...EVENTS]);
  const [environment, setEnvironment] = useState<'production' | 'staging'>('production');
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        client.POST('/v1/webhooks', {
          body: {
            deployment_id: deploymentId,
            name,
            url,
            events: events as (typeof EVENTS)[number][],
            environment,
            enabled: true,
          },
        }),
      ),
    onSuccess: () => void queries.invalidateQueries({ queryKey: ['webhooks'] }),
  });
  return (
    <>
      <h1>Webhooks</h1>
      <ErrorText error={webhooks.error} />
      <ListTable
        label="Webhooks"
        rows={webhooks.data?.webhooks}
        rowKey={(webhook) => webhook.id}
        columns={[
          {
            header: 'Name',
            cell: (webhook) => (
              <a href={href('webhooks', webhook.id)} title={webhook.id}>
                {webhook.name}
              </a>
            ),
          },
          { header: 'Deployment', cell: (webhook) => <DeploymentName id={webhook.deployment_id} /> },
          { header: 'URL', cell: (webhook) => webhook.url },
          { header: 'Events', cell: (webhook) => webhook.events.join(', ') },
          { header: 'Enabled', cell: (webhook) => (webhook.enabled ? 'yes' : 'no') },
          { header: 'Created', cell: (webhook) => <When at={webhook.created_at} /> },
        ]}
      />
      <ShownOnce
        created={create}
        secret={(created) => ({ label: `Signing secret of ${created.name}`, value: created.secret })}
      >
        <form
          className="panel"
          aria-label="Create a webhook"
          onSubmit={(event: FormEvent) => {
            event.preventDefault();
            create.mutate();
          }}
        >
          <h2>New webhook</h2>
          <DeploymentPicker value={deploymentId} onChange={setDeploymentId} />
          <Field label="Name">
            {(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <Field label="URL">
            {(id) => <input id={id} type="url" required value={url} onChange={(e) => setUrl(e.target.value)} />}
          </Field>
          <fieldset>
            <legend>Events</legend>
            {EVENTS.map((event) => (
              <label key={event}>
                <input
                  type="checkbox"
                  checked={events.includes(event)}
                  onChange={(e) =>
                    setEvents(e.target.checked ? [...events, event] : events.filter((item) => item !== event))
                  }
                />{' '}
                {event}
              </label>
            ))}
          </fieldset>
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
            Create webhook
          </button>
          <ErrorText error={create.error} />
        </form>
      </ShownOnce>
    </>
  );
}
