import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { type Schemas, unwrap } from '../../../src/client/index.js';
import { DeploymentPicker } from '../components/deployment-picker.js';
import { ListTable } from '../components/list-table.js';
import { DeploymentName, threadLabel, useDeployments } from '../components/names.js';
import { wholeRuns } from '../components/run-table.js';
import { ErrorText, Field, parseJson, Status, When } from '../components/ui.js';
import { href, navigate } from '../router.js';
import { useSession } from '../session.js';
import { ThreadDetail } from './thread-detail.js';

const STATUSES = ['idle', 'busy', 'interrupted', 'error'] as const;
type ThreadStatus = (typeof STATUSES)[number];
/** Threads asked of each deployment, and shown in all. */
const PER_DEPLOYMENT = 20;
const SHOWN = 50;

export default function ThreadsPage({ params }: { params: string[] }) {
  if (params[0]) return <ThreadDetail key={params[0]} id={params[0]} />;
  return <ThreadList />;
}

/**
 * The deployments whose threads to list: every deployment for an admin key; a member key, which cannot list
 * deployments, gets those of the latest runs.
 */
function useThreadDeployments(): { ids: string[] | undefined; error: unknown } {
  const { client, role } = useSession();
  const deployments = useDeployments();
  const runs = useQuery({
    queryKey: ['runs', { limit: 200 }],
    queryFn: () => unwrap(client.GET('/v1/runs', { params: { query: { limit: 200 } } })),
    enabled: role !== 'admin',
  });
  if (role === 'admin') {
    return { ids: deployments.data?.deployments.map((deployment) => deployment.id), error: deployments.error };
  }
  return {
    ids: runs.data ? [...new Set(wholeRuns(runs.data.runs).map((run) => run.deployment_id))] : undefined,
    error: runs.error,
  };
}

function ThreadList() {
  const { client } = useSession();
  const [deploymentId, setDeploymentId] = useState('');
  const [status, setStatus] = useState<ThreadStatus | ''>('');
  const every = useThreadDeployments();
  const ids = deploymentId ? [deploymentId] : every.ids;
  // GET /v1/threads lists one deployment's threads (SPEC §4): asked of each deployment, newest updated first.
  const threads = useQuery({
    queryKey: ['threads', { ids, status }],
    queryFn: async () => {
      const lists = await Promise.all(
        (ids ?? []).map((id) => {
          const query = { deployment_id: id, limit: PER_DEPLOYMENT, ...(status ? { status } : {}) };
          return unwrap(client.GET('/v1/threads', { params: { query } }));
        }),
      );
      return lists
        .flatMap((list) => list.threads)
        .sort((a, b) => b.updated_at.localeCompare(a.updated_at))
        .slice(0, SHOWN);
    },
    enabled: ids !== undefined,
    refetchInterval: 5000,
  });
  return (
    <>
      <h1>Threads</h1>
      <form className="filters" aria-label="Filter threads" onSubmit={(event) => event.preventDefault()}>
        <DeploymentPicker allowAll value={deploymentId} onChange={setDeploymentId} />
        <Field label="Status">
          {(id) => (
            <select id={id} value={status} onChange={(e) => setStatus(e.target.value as ThreadStatus | '')}>
              <option value="">Any status</option>
              {STATUSES.map((value) => (
                <option key={value} value={value}>
                  {value === 'interrupted' ? 'waiting for input' : value}
                </option>
              ))}
            </select>
          )}
        </Field>
      </form>
      <ErrorText error={every.error ?? threads.error} />
      {threads.data ? <ThreadTable threads={threads.data} /> : null}
      <CreateThread key={deploymentId} chosen={deploymentId} />
    </>
  );
}

function ThreadTable({ threads }: { threads: Schemas['Thread'][] }) {
  return (
    <ListTable
      label="Threads"
      empty="No threads."
      rows={threads}
      rowKey={(thread) => thread.thread_id}
      columns={[
        {
          header: 'Thread',
          cell: (thread) => (
            <a href={href('threads', thread.thread_id)} title={thread.thread_id}>
              {threadLabel(thread)}
            </a>
          ),
        },
        { header: 'Status', cell: (thread) => <Status value={thread.status} /> },
        {
          header: 'Deployment',
          cell: (thread) => (thread.deployment_id ? <DeploymentName id={thread.deployment_id} /> : '—'),
        },
        { header: 'Updated', cell: (thread) => <When at={thread.updated_at} /> },
      ]}
    />
  );
}

function CreateThread({ chosen }: { chosen: string }) {
  const { client } = useSession();
  const queries = useQueryClient();
  const [deploymentId, setDeploymentId] = useState(chosen);
  const [metadata, setMetadata] = useState('{}');
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        client.POST('/v1/threads', {
          body: {
            deployment_id: deploymentId,
            metadata: (parseJson(metadata, 'Metadata') ?? {}) as Record<string, unknown>,
          },
        }),
      ),
    onSuccess: (thread) => {
      void queries.invalidateQueries({ queryKey: ['threads'] });
      navigate('threads', thread.thread_id);
    },
  });
  return (
    <form
      className="panel"
      aria-label="Create a thread"
      onSubmit={(event: FormEvent) => {
        event.preventDefault();
        create.mutate();
      }}
    >
      <h2>New thread</h2>
      <DeploymentPicker value={deploymentId} onChange={setDeploymentId} />
      <Field label="Metadata (JSON)" hint='A "name" in the metadata names the thread in lists'>
        {(id) => <textarea id={id} rows={2} value={metadata} onChange={(e) => setMetadata(e.target.value)} />}
      </Field>
      <button type="submit" disabled={create.isPending}>
        Create thread
      </button>
      <ErrorText error={create.error} />
    </form>
  );
}
