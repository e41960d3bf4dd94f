import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { DeploymentPicker } from '../components/deployment-picker.js';
import { ListTable } from '../components/list-table.js';
import { ErrorText, Field, parseJson, Status, When } from '../components/ui.js';
import { href, navigate } from '../router.js';
import { useSession } from '../session.js';
import { ThreadDetail } from './thread-detail.js';

const STATUSES = ['idle', 'busy', 'interrupted', 'error'] as const;
type ThreadStatus = (typeof STATUSES)[number];

export default function ThreadsPage({ params }: { params: string[] }) {
  if (params[0]) return <ThreadDetail key={params[0]} id={params[0]} />;
  return <ThreadList />;
}

function ThreadList() {
  const { client } = useSession();
  const queries = useQueryClient();
  const [deploymentId, setDeploymentId] = useState('');
  const [status, setStatus] = useState<ThreadStatus | ''>('');
  const [metadata, setMetadata] = useState('{}');
  const query = { deployment_id: deploymentId, limit: 100, ...(status ? { status } : {}) };
  const threads = useQuery({
    queryKey: ['threads', query],
    queryFn: () => unwrap(client.GET('/v1/threads', { params: { query } })),
    enabled: deploymentId !== '',
  });
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
    <>
      <h1>Threads</h1>
      <form className="filters" aria-label="Filter threads" onSubmit={(event) => event.preventDefault()}>
        <DeploymentPicker value={deploymentId} onChange={setDeploymentId} />
        <Field label="Status">
          {(id) => (
            <select id={id} value={status} onChange={(e) => setStatus(e.target.value as ThreadStatus | '')}>
              <option value="">Any status</option>
              {STATUSES.map((value) => (
                <option key={value}>{value}</option>
              ))}
            </select>
          )}
        </Field>
      </form>
      {deploymentId === '' ? <p>Choose a deployment to see its threads.</p> : null}
      <ErrorText error={threads.error} />
      {threads.data ? (
        <ListTable
          label="Threads"
          rows={threads.data.threads}
          rowKey={(thread) => thread.thread_id}
          columns={[
            { header: 'Thread', cell: (thread) => <a href={href('threads', thread.thread_id)}>{thread.thread_id}</a> },
            { header: 'Status', cell: (thread) => <Status value={thread.status} /> },
            { header: 'Updated', cell: (thread) => <When at={thread.updated_at} /> },
          ]}
        />
      ) : null}
      {deploymentId ? (
        <form
          className="panel"
          aria-label="Create a thread"
          onSubmit={(event: FormEvent) => {
            event.preventDefault();
            create.mutate();
          }}
        >
          <Field label="Metadata (JSON)">
            {(id) => <textarea id={id} rows={2} value={metadata} onChange={(e) => setMetadata(e.target.value)} />}
          </Field>
          <button type="submit">Create thread</button>
          <ErrorText error={create.error} />
        </form>
      ) : null}
    </>
  );
}
