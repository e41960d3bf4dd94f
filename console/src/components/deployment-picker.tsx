import { useSession } from '../session.js';
import { useDeployments } from './names.js';
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
  const { role } = useSession();
  const deployments = useDeployments();
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
