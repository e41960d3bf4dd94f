import { useQuery } from '@tanstack/react-query';
import { unwrap } from '../../../src/client/index.js';
import { useSession } from '../session.js';
import { Field } from './ui.js';

/** Admin keys pick from the deployments; member keys (which cannot list them) type the id. */
export function DeploymentPicker({
  value,
  onChange,
  label = 'Deployment',
  allowAll = false,
}: {
  value: string;
  onChange(id: string): void;
  label?: string;
  allowAll?: boolean;
}) {
  const { client, role } = useSession();
  const deployments = useQuery({
    queryKey: ['deployments'],
    queryFn: () => unwrap(client.GET('/v1/deployments', { params: { query: { limit: 200 } } })),
    enabled: role === 'admin',
  });
  return (
    <Field label={label}>
      {(id) =>
        role === 'admin' ? (
          <select id={id} value={value} onChange={(event) => onChange(event.target.value)}>
            <option value="">{allowAll ? 'All deployments' : 'Choose a deployment'}</option>
            {deployments.data?.deployments.map((deployment) => (
              <option key={deployment.id} value={deployment.id}>
                {deployment.name}
              </option>
            ))}
          </select>
        ) : (
          <input id={id} value={value} placeholder="dep_…" onChange={(event) => onChange(event.target.value.trim())} />
        )
      }
    </Field>
  );
}
