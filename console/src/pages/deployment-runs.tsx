import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { RunTable, StartRunForm, wholeRuns } from '../components/run-table.js';
import { ErrorText } from '../components/ui.js';
import { useSession } from '../session.js';

const SHOWN = 20;

/** A deployment's latest runs, and a Run button that starts one with a JSON input. */
export function DeploymentRuns({ deploymentId }: { deploymentId: string }) {
  const { client } = useSession();
  const [starting, setStarting] = useState(false);
  const query = { deployment_id: deploymentId, limit: SHOWN };
  const runs = useQuery({
    queryKey: ['runs', query],
    queryFn: () => unwrap(client.GET('/v1/runs', { params: { query } })),
    refetchInterval: 5000,
  });
  const total = runs.data?.total ?? 0;
  return (
    <section aria-labelledby="deployment-runs">
      <div className="row">
        <h2 id="deployment-runs">Runs</h2>
        <button type="button" aria-expanded={starting} onClick={() => setStarting(!starting)}>
          Run
        </button>
      </div>
      {starting ? (
        <div className="panel">
          <StartRunForm deploymentId={deploymentId} label="Run this deployment" />
        </div>
      ) : null}
      <ErrorText error={runs.error} />
      {runs.data ? <RunTable label="Runs of this deployment" runs={wholeRuns(runs.data.runs)} /> : null}
      {total > SHOWN ? (
        <p>
          <a href={`#/runs?deployment=${encodeURIComponent(deploymentId)}`}>All {total} runs</a>
        </p>
      ) : null}
    </section>
  );
}
