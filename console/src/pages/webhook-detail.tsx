import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { DetailHeader, Fact, Facts } from '../components/detail-header.js';
import { ListTable } from '../components/list-table.js';
import { DeploymentName } from '../components/names.js';
import { ShownOnce } from '../components/secret-once.js';
import { ErrorText, Json, Status, When } from '../components/ui.js';
import { navigate } from '../router.js';
import { useSession } from '../session.js';

export function WebhookDetail({ id }: { id: string }) {
  const { client } = useSession();
  const queries = useQueryClient();
  const path = { params: { path: { id } } };
  const [open, setOpen] = useState<string | null>(null);
  const webhook = useQuery({ queryKey: ['webhook', id], queryFn: () => unwrap(client.GET('/v1/webhooks/{id}', path)) });
  const deliveries = useQuery({
    queryKey: ['deliveries', id],
    queryFn: () =>
      unwrap(client.GET('/v1/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: 50 } } })),
    refetchInterval: 3000,
  });
  const toggle = useMutation({
    mutationFn: (enabled: boolean) => unwrap(client.PATCH('/v1/webhooks/{id}', { ...path, body: { enabled } })),
    onSettled: () => queries.invalidateQueries({ queryKey: ['webhook', id] }),
  });
  // The checkbox follows the click at once (React state, set in the same event); once the change is
  // settled, the refetch shows what the server kept.
  const [clicked, setClicked] = useState<boolean | null>(null);
  const setEnabled = (enabled: boolean) => {
    setClicked(enabled);
    toggle.mutate(enabled, {
      onSettled: () => void queries.invalidateQueries({ queryKey: ['webhook', id] }).then(() => setClicked(null)),
    });
  };
  const regenerate = useMutation({ mutationFn: () => unwrap(client.POST('/v1/webhooks/{id}/secret', path)) });
  const redeliver = useMutation({
    mutationFn: (deliveryId: string) =>
      unwrap(
        client.POST('/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', {
          params: { path: { id, delivery_id: deliveryId } },
        }),
      ),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['deliveries', id] }),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(client.DELETE('/v1/webhooks/{id}', path)),
    onSuccess: () => {
      void queries.invalidateQueries({ queryKey: ['webhooks'] });
      navigate('webhooks');
    },
  });
  const data = webhook.data;
  return (
    <>
      <DetailHeader
        back={{ page: 'webhooks', label: 'Webhooks' }}
        title={data?.name ?? 'Webhook'}
        error={webhook.error ?? toggle.error ?? regenerate.error ?? remove.error}
      />
      {data ? (
        <Facts>
          <Fact name="URL">{data.url}</Fact>
          <Fact name="Events">{data.events.join(', ')}</Fact>
          <Fact name="Deployment">
            <DeploymentName id={data.deployment_id} withId /> ({data.environment})
          </Fact>
          <Fact name="Id">
            <code>{data.id}</code>
          </Fact>
          <Fact name="Enabled">
            <label>
              <input type="checkbox" checked={clicked ?? data.enabled} onChange={(e) => setEnabled(e.target.checked)} />{' '}
              Enabled
            </label>
          </Fact>
        </Facts>
      ) : null}
      <ShownOnce created={regenerate} secret={(fresh) => ({ label: 'New signing secret', value: fresh.secret })}>
        <button
          type="button"
          onClick={() => {
            if (window.confirm('The old secret stops signing at once. Regenerate?')) regenerate.mutate();
          }}
        >
          Regenerate secret
        </button>
      </ShownOnce>
      <h2>Deliveries</h2>
      <ErrorText error={deliveries.error ?? redeliver.error} />
      <ListTable
        label="Deliveries"
        rows={deliveries.data?.deliveries}
        rowKey={(delivery) => delivery.id}
        columns={[
          { header: 'Delivery', cell: (delivery) => delivery.id },
          { header: 'Event', cell: (delivery) => delivery.event },
          { header: 'Status', cell: (delivery) => <Status value={delivery.status} /> },
          { header: 'Attempts', cell: (delivery) => delivery.attempts },
          { header: 'Answer', cell: (delivery) => delivery.response_status ?? delivery.error_message ?? '—' },
          { header: 'Created', cell: (delivery) => <When at={delivery.created_at} /> },
          {
            header: 'Actions',
            className: 'actions',
            cell: (delivery) => (
              <>
                <button type="button" aria-label={`Attempts of ${delivery.id}`} onClick={() => setOpen(delivery.id)}>
                  Attempts
                </button>
                <button
                  type="button"
                  aria-label={`Redeliver ${delivery.id}`}
                  onClick={() => redeliver.mutate(delivery.id)}
                >
                  Redeliver
                </button>
              </>
            ),
          },
        ]}
      />
      {open ? <DeliveryAttempts webhookId={id} deliveryId={open} /> : null}
      <button
        type="button"
        className="danger"
        onClick={() => {
          if (window.confirm('Delete this webhook and its delivery log?')) remove.mutate();
        }}
      >
        Delete webhook
      </button>
    </>
  );
}

function DeliveryAttempts({ webhookId, deliveryId }: { webhookId: string; deliveryId: string }) {
  const { client } = useSession();
  const delivery = useQuery({
    queryKey: ['delivery', webhookId, deliveryId],
    queryFn: () =>
      unwrap(
        client.GET('/v1/webhooks/{id}/deliveries/{delivery_id}', {
          params: { path: { id: webhookId, delivery_id: deliveryId } },
        }),
      ),
  });
  return (
    <section className="panel" aria-label={`Delivery ${deliveryId}`}>
      <h2>Delivery {deliveryId}</h2>
      <ErrorText error={delivery.error} />
      <ol aria-label="Attempts">
        {delivery.data?.attempt_history.map((attempt) => (
          <li key={attempt.number}>
            Attempt {attempt.number}: <When at={attempt.attempted_at} />, {attempt.duration_ms} ms,{' '}
            {attempt.response_status ?? attempt.error_message}
          </li>
        ))}
      </ol>
      {delivery.data ? <Json label="Body" value={delivery.data.payload} /> : null}
    </section>
  );
}
