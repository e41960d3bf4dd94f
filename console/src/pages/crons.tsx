import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { DeploymentPicker } from '../components/deployment-picker.js';
import { ErrorText, Field, parseJson, When } from '../components/ui.js';
import { rawCall } from '../raw.js';
import { href } from '../router.js';
import { useRouteAvailable } from '../routes.js';
import { useSession } from '../session.js';

/** A cron as CONTRACTS §11 describes it. */
interface Cron {
  id: string;
  deployment_id: string;
  schedule: string;
  timezone: string;
  environment: string;
  enabled: boolean;
  next_run_at: string | null;
  last_run_at: string | null;
  last_run_id: string | null;
  last_error?: string | null;
}

export default function CronsPage() {
  const available = useRouteAvailable('/v1/crons');
  if (available === undefined) return <p>Loading…</p>;
  if (!available) {
    return (
      <>
        <h1>Crons</h1>
        <p>This server does not serve crons yet.</p>
      </>
    );
  }
  return <CronList />;
}

function CronList() {
  const { key } = useSession();
  const queries = useQueryClient();
  const [deploymentId, setDeploymentId] = useState('');
  const [schedule, setSchedule] = useState('0 * * * *');
  const [timezone, setTimezone] = useState('UTC');
  const [input, setInput] = useState('{}');
  const crons = useQuery({
    queryKey: ['crons'],
    queryFn: () => rawCall<{ crons: Cron[] }>(key, 'GET', '/v1/crons?limit=200'),
  });
  const refresh = () => void queries.invalidateQueries({ queryKey: ['crons'] });
  const create = useMutation({
    mutationFn: () =>
      rawCall<Cron>(key, 'POST', '/v1/crons', {
        deployment_id: deploymentId,
        schedule,
        timezone,
        input: parseJson(input, 'Input') ?? {},
      }),
    onSuccess: refresh,
  });
  const patch = useMutation({
    mutationFn: ({ id, enabled }: { id: string; enabled: boolean }) =>
      rawCall<Cron>(key, 'PATCH', `/v1/crons/${encodeURIComponent(id)}`, { enabled }),
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
    mutationFn: (id: string) => rawCall(key, 'DELETE', `/v1/crons/${encodeURIComponent(id)}`),
    onSuccess: refresh,
  });
  return (
    <>
      <h1>Crons</h1>
      <ErrorText error={crons.error ?? patch.error ?? remove.error} />
      <div className="scroll">
        <table aria-label="Crons">
          <thead>
            <tr>
              <th scope="col">Schedule</th>
              <th scope="col">Deployment</th>
              <th scope="col">Next run</th>
              <th scope="col">Last run</th>
              <th scope="col">Enabled</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {crons.data?.crons.map((cron) => (
              <tr key={cron.id}>
                <td>
                  <code>{cron.schedule}</code> ({cron.timezone})
                </td>
                <td>{cron.deployment_id}</td>
                <td>
                  <When at={cron.next_run_at} />
                </td>
                <td>
                  {cron.last_run_id ? <a href={href('runs', cron.last_run_id)}>{cron.last_run_id}</a> : '—'}
                  {cron.last_error ? <div className="error-message">{cron.last_error}</div> : null}
                </td>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Enabled: ${cron.schedule} (${cron.id})`}
                    checked={clicked[cron.id] ?? cron.enabled}
                    onChange={(e) => toggle(cron.id, e.target.checked)}
                  />
                </td>
                <td>
                  <button type="button" aria-label={`Delete cron ${cron.id}`} onClick={() => remove.mutate(cron.id)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
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
