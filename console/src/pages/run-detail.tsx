import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { unwrap } from '../../../src/client/index.js';
import { DetailHeader, Fact, Facts } from '../components/detail-header.js';
import { DeploymentName } from '../components/names.js';
import { Duration, RunStatus } from '../components/run-status.js';
import { formatCost, RunUsageTable } from '../components/run-usage.js';
import { Timeline, useEventStream } from '../components/timeline.js';
import { ErrorText, Json, When } from '../components/ui.js';
import { href } from '../router.js';
import { useSession } from '../session.js';

export function RunDetail({ id }: { id: string }) {
  const { client, key } = useSession();
  const queries = useQueryClient();
  const run = useQuery({
    queryKey: ['run', id],
    queryFn: () => unwrap(client.GET('/v1/runs/{id}', { params: { path: { id } } })),
    // A pending run's start time shows once it starts.
    refetchInterval: (query) => (query.state.data?.status === 'pending' ? 1000 : false),
  });
  const stream = useEventStream(`/v1/runs/${encodeURIComponent(id)}/events`, key, () => {
    void queries.invalidateQueries({ queryKey: ['run', id] });
  });
  const cancel = useMutation({
    mutationFn: () => unwrap(client.POST('/v1/runs/{id}/cancel', { params: { path: { id } } })),
    onSettled: () => queries.invalidateQueries({ queryKey: ['run', id] }),
  });
  const data = run.data;
  return (
    <>
      <DetailHeader back={{ page: 'runs', label: 'Runs' }} title={`Run ${id}`} error={run.error} />
      {data ? (
        <Facts>
          <Fact name="Status">
            <RunStatus run={data} />
          </Fact>
          <Fact name="Deployment">
            <DeploymentName id={data.deployment_id} withId />
          </Fact>
          <Fact name="Environment">{data.environment}</Fact>
          <Fact name="Thread">
            {data.thread_id ? <a href={href('threads', data.thread_id)}>{data.thread_id}</a> : '—'}
          </Fact>
          <Fact name="Created">
            <When at={data.created_at} />
          </Fact>
          <Fact name="Completed">
            <When at={data.completed_at} />
          </Fact>
          <Fact name="Duration">
            <Duration run={data} />
          </Fact>
          <Fact name="Cost">{data.usage ? formatCost(data.usage.cost) : '—'}</Fact>
          <Fact name="Trace">{data.trace_id ?? '—'}</Fact>
        </Facts>
      ) : null}
      {data && (data.status === 'pending' || data.status === 'running') ? (
        <button type="button" onClick={() => cancel.mutate()} disabled={cancel.isPending}>
          Cancel run
        </button>
      ) : null}
      <ErrorText error={cancel.error} />
      {data?.error_message ? (
        <div className="error-message">
          Error <pre className="log-text error-text">{data.error_message}</pre>
        </div>
      ) : null}
      <Timeline label="Timeline" {...stream} />
      {data ? (
        <section aria-label="Usage">
          <h2>Usage</h2>
          <RunUsageTable usage={data.usage} />
        </section>
      ) : null}
      {data ? <Json label="Input" value={data.input} /> : null}
      {data?.output ? <Json label="Output" value={data.output} /> : null}
    </>
  );
}
