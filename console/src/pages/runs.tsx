import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { type Schemas, unwrap } from '../../../src/client/index.js';
import { DeploymentPicker } from '../components/deployment-picker.js';
import { ListTable } from '../components/list-table.js';
import { ErrorText, Field, Pager, parseJson, Status, When } from '../components/ui.js';
import { hashQuery, href, navigate } from '../router.js';
import { useSession } from '../session.js';
import { RunDetail } from './run-detail.js';

const STATUSES = ['pending', 'running', 'succeeded', 'failed', 'canceled'] as const;
type RunStatus = (typeof STATUSES)[number];
const PAGE_SIZES = [50, 200, 1000];

export default function RunsPage({ params }: { params: string[] }) {
  if (params[0]) return <RunDetail key={params[0]} id={params[0]} />;
  return <RunList />;
}

function RunList() {
  const { client } = useSession();
  const [deploymentId, setDeploymentId] = useState('');
  const [threadId, setThreadId] = useState('');
  const [status, setStatus] = useState<RunStatus | ''>('');
  const [offset, setOffset] = useState(0);
  const [limit, setLimit] = useState(() => {
    const asked = Number(hashQuery().get('limit'));
    return PAGE_SIZES.includes(asked) ? asked : 50;
  });
  const query = {
    limit,
    offset,
    ...(deploymentId ? { deployment_id: deploymentId } : {}),
    ...(threadId ? { thread_id: threadId } : {}),
    ...(status ? { status } : {}),
  };
  const runs = useQuery({
    queryKey: ['runs', query],
    queryFn: () => unwrap(client.GET('/v1/runs', { params: { query } })),
    refetchInterval: 5000,
  });
  return (
    <>
      <h1>Runs</h1>
      <StartRun />
      <form className="filters" aria-label="Filter runs" onSubmit={(event) => event.preventDefault()}>
        <DeploymentPicker
          allowAll
          value={deploymentId}
          onChange={(id) => {
            setDeploymentId(id);
            setOffset(0);
          }}
        />
        <Field label="Thread">
          {(id) => (
            <input
              id={id}
              value={threadId}
              placeholder="thread id"
              onChange={(e) => setThreadId(e.target.value.trim())}
            />
          )}
        </Field>
        <Field label="Status">
          {(id) => (
            <select id={id} value={status} onChange={(e) => setStatus(e.target.value as RunStatus | '')}>
              <option value="">Any status</option>
              {STATUSES.map((value) => (
                <option key={value}>{value}</option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Runs per page">
          {(id) => (
            <select
              id={id}
              value={limit}
              onChange={(e) => {
                setLimit(Number(e.target.value));
                setOffset(0);
              }}
            >
              {PAGE_SIZES.map((size) => (
                <option key={size}>{size}</option>
              ))}
            </select>
          )}
        </Field>
      </form>
      <ErrorText error={runs.error} />
      {runs.data ? <RunTable runs={runs.data.runs} /> : null}
      {runs.data ? (
        <Pager
          offset={offset}
          limit={limit}
          total={runs.data.total}
          count={runs.data.runs.length}
          onChange={setOffset}
        />
      ) : null}
    </>
  );
}

function RunTable({ runs }: { runs: Schemas['Run'][] }) {
  return (
    <ListTable
      label="Runs"
      fixed
      empty="No runs."
      rows={runs}
      rowKey={(run) => run.id}
      columns={[
        { header: 'Run', cell: (run) => <a href={href('runs', run.id)}>{run.id}</a> },
        { header: 'Status', cell: (run) => <Status value={run.status} /> },
        { header: 'Deployment', cell: (run) => run.deployment_id },
        { header: 'Environment', cell: (run) => run.environment },
        { header: 'Created', cell: (run) => <When at={run.created_at} /> },
      ]}
    />
  );
}

function StartRun() {
  const { client } = useSession();
  const queries = useQueryClient();
  const [deploymentId, setDeploymentId] = useState('');
  const [environment, setEnvironment] = useState<'production' | 'staging'>('production');
  const [input, setInput] = useState('{}');
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
    <details className="panel">
      <summary>Start a run</summary>
      <form
        aria-label="Start a run"
        onSubmit={(event: FormEvent) => {
          event.preventDefault();
          start.mutate();
        }}
      >
        <DeploymentPicker value={deploymentId} onChange={setDeploymentId} />
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
    </details>
  );
}
