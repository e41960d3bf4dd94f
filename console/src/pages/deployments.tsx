import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { ListTable } from '../components/list-table.js';
import { useDeployments } from '../components/names.js';
import { ErrorText, Field, When } from '../components/ui.js';
import { href } from '../router.js';
import { useSession } from '../session.js';
import { DeploymentDetail } from './deployment-detail.js';

export default function DeploymentsPage({ params }: { params: string[] }) {
  if (params[0]) return <DeploymentDetail key={params[0]} id={params[0]} />;
  return <DeploymentList />;
}

function DeploymentList() {
  const { client } = useSession();
  const queries = useQueryClient();
  const [name, setName] = useState('');
  const deployments = useDeployments();
  const create = useMutation({
    mutationFn: () => unwrap(client.POST('/v1/deployments', { body: { name } })),
    onSuccess: () => {
      setName('');
      void queries.invalidateQueries({ queryKey: ['deployments'] });
    },
  });
  return (
    <>
      <h1>Deployments</h1>
      <form
        className="inline"
        aria-label="Create a deployment"
        onSubmit={(event: FormEvent) => {
          event.preventDefault();
          create.mutate();
        }}
      >
        <Field label="New deployment name">
          {(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <button type="submit">Create deployment</button>
      </form>
      <ErrorText error={create.error ?? deployments.error} />
      <ListTable
        label="Deployments"
        rows={deployments.data?.deployments}
        rowKey={(deployment) => deployment.id}
        columns={[
          {
            header: 'Name',
            cell: (deployment) => <a href={href('deployments', deployment.id)}>{deployment.name}</a>,
          },
          { header: 'Production', cell: (deployment) => runningVersion(deployment.environments.production) },
          { header: 'Staging', cell: (deployment) => runningVersion(deployment.environments.staging) },
          { header: 'Created', cell: (deployment) => <When at={deployment.created_at} /> },
        ]}
      />
    </>
  );
}

function runningVersion(running: { version_number: number } | null | undefined): string {
  return running ? `v${running.version_number}` : '—';
}
