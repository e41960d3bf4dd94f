import { useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { href } from '../router.js';
import { useSession } from '../session.js';

/** The organization's deployments (admin keys only: the API refuses the list to member keys). */
export function useDeployments() {
  const { client, role } = useSession();
  return useQuery({
    queryKey: ['deployments'],
    queryFn: () => unwrap(client.GET('/v1/deployments', { params: { query: { limit: 200 } } })),
    enabled: role === 'admin',
  });
}

/** Deployment id → name; empty for a member key, whose pages then show ids. */
export function useDeploymentNames(): ReadonlyMap<string, string> {
  const { data } = useDeployments();
  return useMemo(() => new Map(data?.deployments.map((deployment) => [deployment.id, deployment.name])), [data]);
}

/** A deployment by its name, its id on hover and, with `withId`, beside it; a link to its page for admin keys. */
export function DeploymentName({ id, withId = false }: { id: string; withId?: boolean }) {
  return <NamedDeployment id={id} name={useDeploymentNames().get(id)} withId={withId} />;
}

/** As DeploymentName, the name looked up once for a whole list (`useDeploymentNames`). */
export function NamedDeployment({ id, name, withId = false }: { id: string; name?: string; withId?: boolean }) {
  if (!name) return <code>{id}</code>;
  // Only admin keys get names, and only they may open a deployment's page.
  const label = <a href={href('deployments', id)}>{name}</a>;
  return (
    <>
      <span title={id}>{label}</span>
      {withId ? (
        <>
          {' '}
          <code className="muted-id">{id}</code>
        </>
      ) : null}
    </>
  );
}

/** A thread's name, when its metadata gives one (`metadata.name`), else its id. */
export function threadLabel(thread: { thread_id: string; metadata: Record<string, unknown> }): string {
  const name = thread.metadata.name;
  return typeof name === 'string' && name.trim() !== '' ? name : thread.thread_id;
}
