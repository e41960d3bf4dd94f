import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { type Schemas, unwrap } from '../../../src/client/index.js';
import { href, navigate } from '../router.js';
import { useSession } from '../session.js';
import { DeploymentPicker } from './deployment-picker.js';
import { ListTable } from './list-table.js';
import { NamedDeployment, useDeploymentNames } from './names.js';
import { Duration, RunStatus } from './run-status.js';
import { ErrorText, Field, parseJson, When } from './ui.js';

/** A run list asked for without `fields`: each run has every field (GET /v1/runs, CONTRACTS §15). */
export const wholeRuns = (runs: Schemas['ListedRun'][]) => runs as Schemas['Run'][];

/** Runs as a table: status ("waiting for input" at an interrupt), deployment by name, duration. */
export function RunTable({ runs, label = 'Runs' }: { runs: Schemas['Run'][]; label?: string }) {
  const names = useDeploymentNames();
  return (
    <ListTable
      label={label}
      fixed
      empty="No runs."
      rows={runs}
      rowKey={(run) => run.id}
      columns={[
        { header: 'Run', width: '17rem', cell: (run) => <a href={href('runs', run.id)}>{run.id}</a> },
        { header: 'Status', width: '10rem', cell: (run) => <RunStatus run={run} /> },
        {
          header: 'Deployment',
          width: '11rem',
          cell: (run) => <NamedDeployment id={run.deployment_id} name={names.get(run.deployment_id)} />,
        },
        { header: 'Environment', width: '8rem', cell: (run) => run.environment },
        { header: 'Duration', width: '7rem', cell: (run) => <Duration run={run} /> },
        { header: 'Created', width: '13rem', cell: (run) => <When at={run.created_at} /> },
      ]}
    />
  );
}

/** Starts a run with a JSON input and opens its page; without `deploymentId` it asks for the deployment. */
export function StartRunForm({ deploymentId: fixed, label }: { deploymentId?: string; label: string }) {
  const { client } = useSession();
  const queries = useQueryClient();
  const [chosen, setChosen] = useState('');
  const [environment, setEnvironment] = useState<'production' | 'staging'>('production');
  const [input, setInput] = useState('{}');
  const deploymentId = fixed ?? chosen;
  const start = useMutation({
    mutationFn: async () => {
      const body = {
        deployment_id: deploymentId,
        environment,
        input: (parseJson(input, 'Input') ?? {}) as Record<string, unknown>,
      };
      return unwrap(client.POST('/v1/runs', { body }));
    },
    onSuccess: (created) => {
      void queries.invalidateQueries({ queryKey: ['runs'] });
      navigate('runs', created.run_id);
    },
  });
  return (
    <form
      aria-label={label}
      onSubmit={(event: FormEvent) => {
        event.preventDefault();
        start.mutate();
      }}
    >
      {fixed ? null : <DeploymentPicker value={chosen} onChange={setChosen} />}
      <Field label="Environment">
        {(id) => (
          <select id={id} value={environment} onChange={(e) => setEnvironment(e.target.value as typeof environment)}>
            <option>production</option>
            <option>staging</option>
          </select>
        )}
      </Field>
      <Field label="Input (JSON)">
        {(id) => <textarea id={id} rows={4} value={input} onChange={(e) => setInput(e.target.value)} />}
      </Field>
      <button type="submit" disabled={start.isPending}>
        Start run
      </button>
      <ErrorText error={start.error} />
    </form>
  );
}
