import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { DeploymentPicker } from '../components/deployment-picker.js';
import { ListTable } from '../components/list-table.js';
import { DeploymentName } from '../components/names.js';
import { ErrorText, Field, parseJson, When } from '../components/ui.js';
import { href } from '../router.js';
import { useSession } from '../session.js';

export default function CronsPage() {
  const { client } = useSession();
  const queries = useQueryClient();
  const [deploymentId, setDeploymentId] = useState('');
  const [schedule, setSchedule] = useState('0 * * * *');
  const [timezone, setTimezone] = useState('UTC');
  const [input, setInput] = useState('{}');
  const crons = useQuery({
    queryKey: ['crons'],
    queryFn: () => unwrap(client.GET('/v1/crons', { params: { query: { limit: 200 } } })),
  });
  const refresh = () => void queries.invalidateQueries({ queryKey: ['crons'] });
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        client.POST('/v1/crons', {
          body: {
            deployment_id: deploymentId,
            schedule,
            timezone,
            input: (parseJson(input, 'Input') ?? {}) as Record<string, unknown>,
          },
        }),
      ),
    onSuccess: refresh,
  });
  const patch = useMutation({
    mutationFn: ({ id, enabled }: { id: string; enabled: boolean }) =>
      unwrap(client.PATCH('/v1/crons/{id}', { params: { path: { id } }, body: { enabled } })),
    onSettled: refresh,
  });
  // The checkbox follows the click at once (React state, set in the same event); once the change is
  // settled, the refetch shows what the server kept.
  const [clicked, setClicked] = useState<Record<string, boolean>>({});
  const toggle = (id: string, enabled: boolean) => {
    setClicked((current) => ({ ...current, [id]: enabled }));
    patch.mutate(
      { id, enabled },
      {
        onSettled: () =>
          void queries
            .invalidateQueries({ queryKey: ['crons'] })
            .then(() => setClicked(({ [id]: _settled, ...rest }) => rest)),
      },
    );
  };
  const remove = useMutation({
    mutationFn: (id: string) => unwrap(client.DELETE('/v1/crons/{id}', { params: { path: { id } } })),
    onSuccess: refresh,
  });
  return (
    <>
      <h1>Crons</h1>
      <ErrorText error={crons.error ?? patch.error ?? remove.error} />
      <ListTable
        label="Crons"
        rows={crons.data?.crons}
        rowKey={(cron) => cron.id}
        columns={[
          {
            header: 'Schedule',
            cell: (cron) => (
              <>
                <code>{cron.schedule}</code> ({cron.timezone})
              </>
            ),
          },
          { header: 'Deployment', cell: (cron) => <DeploymentName id={cron.deployment_id} /> },
          { header: 'Next run', cell: (cron) => <When at={cron.next_run_at} /> },
          {
            header: 'Last run',
            cell: (cron) => (
              <>
                {cron.last_run_id ? <a href={href('runs', cron.last_run_id)}>{cron.last_run_id}</a> : '—'}
                {cron.last_error ? <div className="error-message">{cron.last_error}</div> : null}
              </>
            ),
          },
          {
            header: 'Enabled',
            cell: (cron) => (
              <input
                type="checkbox"
                aria-label={`Enabled: ${cron.schedule} (${cron.id})`}
                checked={clicked[cron.id] ?? cron.enabled}
                onChange={(e) => toggle(cron.id, e.target.checked)}
              />
            ),
          },
          {
            header: 'Actions',
            cell: (cron) => (
              <button type="button" aria-label={`Delete cron ${cron.id}`} onClick={() => remove.mutate(cron.id)}>
                Delete
              </button>
            ),
          },
        ]}
      />
      <form
        className="panel"
        aria-label="Create a cron"
        onSubmit={(event: FormEvent) => {
          event.preventDefault();
          create.mutate();
        }}
      >
        <h2>New cron</h2>
        <DeploymentPicker value={deploymentId} onChange={setDeploymentId} />
        <Field label="Schedule" hint="5 fields (minute hour day month weekday), or 6 with seconds first">
          {(id) => <input id={id} required value={schedule} onChange={(e) => setSchedule(e.target.value)} />}
        </Field>
        <Field label="Timezone">
          {(id) => <input id={id} value={timezone} onChange={(e) => setTimezone(e.target.value)} />}
        </Field>
        <Field label="Input (JSON)">
          {(id) => <textarea id={id} rows={3} value={input} onChange={(e) => setInput(e.target.value)} />}
        </Field>
        <button type="submit" disabled={create.isPending}>
          Create cron
        </button>
        <ErrorText error={create.error} />
      </form>
    </>
  );
}
