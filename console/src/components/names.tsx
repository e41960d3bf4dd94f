import { useQuery } from '@tanstack/react-query';
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
  const deployments = useDeployments();
  return new Map(deployments.data?.deployments.map((deployment) => [deployment.id, deployment.name]));
}

/** A deployment by its name, its id on hover and, with `withId`, beside it; a link to its page for admin keys. */
export function DeploymentName({ id, withId = false }: { id: string; withId?: boolean }) {
  const { role } = useSession();
  const name = useDeploymentNames().get(id);
  if (!name) return <code>{id}</code>;
  const label = role === 'admin' ? <a href={href('deployments', id)}>{name}</a> : name;
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
