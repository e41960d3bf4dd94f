import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { DeploymentPicker } from '../components/deployment-picker.js';
import { RunTable, StartRunForm, wholeRuns } from '../components/run-table.js';
import { ErrorText, Field, Pager } from '../components/ui.js';
import { hashQuery } from '../router.js';
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
  const [deploymentId, setDeploymentId] = useState(() => hashQuery().get('deployment') ?? '');
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
      {runs.data ? <RunTable runs={wholeRuns(runs.data.runs)} /> : null}
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

function StartRun() {
  return (
    <details className="panel">
      <summary>Start a run</summary>
      <StartRunForm label="Start a run" />
    </details>
  );
}
