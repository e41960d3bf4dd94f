import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { unwrap } from '../../../src/client/index.js';
import { BuildLog } from '../components/build-log.js';
import { DetailHeader, Fact, Facts } from '../components/detail-header.js';
import { ListTable } from '../components/list-table.js';
import { ErrorText, Field, Status, When } from '../components/ui.js';
import { useSession } from '../session.js';
import { DeploymentRuns } from './deployment-runs.js';
import { Variables } from './variables.js';

const ENVIRONMENTS = ['production', 'staging'] as const;
type Environment = (typeof ENVIRONMENTS)[number];

export function DeploymentDetail({ id }: { id: string }) {
  const { client } = useSession();
  const queries = useQueryClient();
  const [logOf, setLogOf] = useState<string | null>(null);
  const deployment = useQuery({
    queryKey: ['deployment', id],
    queryFn: () => unwrap(client.GET('/v1/deployments/{id}', { params: { path: { id } } })),
  });
  const versions = useQuery({
    queryKey: ['versions', id],
    queryFn: async () =>
      (await unwrap(client.GET('/v1/deployments/{id}/versions', { params: { path: { id }, query: { limit: 100 } } })))
        .versions,
    refetchInterval: (query) => (query.state.data?.some((version) => version.status === 'building') ? 2000 : false),
  });
  const refresh = () => {
    void queries.invalidateQueries({ queryKey: ['deployment', id] });
    void queries.invalidateQueries({ queryKey: ['versions', id] });
  };
  const setEnvironment = useMutation({
    mutationFn: ({ environment, versionId }: { environment: Environment; versionId: string | null }) =>
      versionId
        ? unwrap(
            client.PUT('/v1/deployments/{id}/environments/{environment}', {
              params: { path: { id, environment } },
              body: { version_id: versionId },
            }),
          )
        : unwrap(
            client.DELETE('/v1/deployments/{id}/environments/{environment}', { params: { path: { id, environment } } }),
          ),
    onSuccess: refresh,
  });
  const environments = deployment.data?.environments;
  return (
    <>
      <DetailHeader
        back={{ page: 'deployments', label: 'Deployments' }}
        title={deployment.data?.name ?? 'Deployment'}
        error={deployment.error ?? setEnvironment.error}
      />
      <p>
        <code>{id}</code>
      </p>
      {environments ? (
        <Facts label="Environments">
          {ENVIRONMENTS.map((environment) => (
            <Fact key={environment} name={environment}>
              {environments[environment] ? `version ${environments[environment].version_number}` : 'no running version'}{' '}
              {environments[environment] ? (
                <button type="button" onClick={() => setEnvironment.mutate({ environment, versionId: null })}>
                  Clear {environment}
                </button>
              ) : null}
            </Fact>
          ))}
        </Facts>
      ) : null}
      <DeploymentRuns deploymentId={id} />
      <h2>Versions</h2>
      <ErrorText error={versions.error} />
      <ListTable
        label="Versions"
        rows={versions.data}
        rowKey={(version) => version.id}
        columns={[
          { header: 'Version', cell: (version) => `v${version.number}` },
          { header: 'Source', cell: (version) => version.source },
          {
            header: 'Build',
            cell: (version) => (
              <>
                <Status value={version.status} />
                {version.build_error ? (
                  // Its first line; the whole of it ends the build log.
                  <div className="error-message">{version.build_error.split('\n')[0]}</div>
                ) : null}
              </>
            ),
          },
          { header: 'Command', cell: (version) => <code>{version.command.join(' ')}</code> },
          { header: 'Created', cell: (version) => <When at={version.created_at} /> },
          {
            header: 'Actions',
            className: 'actions',
            cell: (version) => (
              <>
                {ENVIRONMENTS.map((environment) => (
                  <button
                    key={environment}
                    type="button"
                    aria-label={`To ${environment}: v${version.number}`}
                    disabled={environments?.[environment]?.version_id === version.id}
                    onClick={() => setEnvironment.mutate({ environment, versionId: version.id })}
                  >
                    To {environment}
                  </button>
                ))}
                {version.source === 'bundle' ? (
                  <button
                    type="button"
                    aria-label={`Build log of v${version.number}`}
                    onClick={() => setLogOf(version.id)}
                  >
                    Build log
                  </button>
                ) : null}
              </>
            ),
          },
        ]}
      />
      {logOf ? (
        <BuildLog
          key={logOf}
          deploymentId={id}
          versionId={logOf}
          title={`Build log of v${versions.data?.find((version) => version.id === logOf)?.number ?? '…'}`}
          onEnd={refresh}
        />
      ) : null}
      <UploadBundle
        deploymentId={id}
        onUploaded={(versionId) => {
          setLogOf(versionId);
          refresh();
        }}
      />
      <CommandVersion deploymentId={id} onCreated={refresh} />
      <Variables deploymentId={id} />
    </>
  );
}

function UploadBundle({ deploymentId, onUploaded }: { deploymentId: string; onUploaded(versionId: string): void }) {
  const { client } = useSession();
  const [file, setFile] = useState<File | null>(null);
  const [environment, setEnvironment] = useState<Environment | ''>('');
  const upload = useMutation({
    mutationFn: () => {
      if (!file) throw new Error('Choose a .tar.gz bundle first');
      return unwrap(
        client.POST('/v1/deployments/{id}/versions', {
          params: { path: { id: deploymentId }, query: environment ? { environment } : {} },
          // The bundle goes as it is: a gzipped tar, not JSON.
          body: file,
          bodySerializer: (bundle) => bundle as File,
          headers: { 'content-type': 'application/gzip' },
        }),
      );
    },
    onSuccess: (version) => onUploaded(version.id),
  });
  return (
    <form
      className="panel"
      aria-label="Upload a bundle"
      onSubmit={(event: FormEvent) => {
        event.preventDefault();
        upload.mutate();
      }}
    >
      <h2>Upload a bundle</h2>
      <Field label="Bundle (.tar.gz of the project folder)">
        {(id) => (
          <input
            id={id}
            type="file"
            accept=".tar.gz,.tgz,application/gzip"
            onChange={(e) => setFile(e.target.files?.[0] ?? null)}
          />
        )}
      </Field>
      <Field label="Run in environment once built">
        {(id) => (
          <select id={id} value={environment} onChange={(e) => setEnvironment(e.target.value as Environment | '')}>
            <option value="">Neither</option>
            <option>production</option>
            <option>staging</option>
          </select>
        )}
      </Field>
      <button type="submit" disabled={upload.isPending}>
        Upload bundle
      </button>
      <ErrorText error={upload.error} />
    </form>
  );
}

function CommandVersion({ deploymentId, onCreated }: { deploymentId: string; onCreated(): void }) {
  const { client } = useSession();
  const [command, setCommand] = useState('');
  const [environment, setEnvironment] = useState<Environment | ''>('production');
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        client.POST('/v1/deployments/{id}/versions', {
          params: { path: { id: deploymentId } },
          body: {
            command: command
              .split('\n')
              .map((part) => part.trim())
              .filter(Boolean),
            env: {},
            ...(environment ? { environment } : {}),
          },
        }),
      ),
    onSuccess: () => {
      setCommand('');
      onCreated();
    },
  });
  return (
    <form
      className="panel"
      aria-label="Create a command version"
      onSubmit={(event: FormEvent) => {
        event.preventDefault();
        create.mutate();
      }}
    >
      <h2>New command version</h2>
      <Field label="Command (one argument per line)">
        {(id) => <textarea id={id} rows={3} value={command} onChange={(e) => setCommand(e.target.value)} />}
      </Field>
      <Field label="Make it the running version of">
        {(id) => (
          <select id={id} value={environment} onChange={(e) => setEnvironment(e.target.value as Environment | '')}>
            <option value="">Neither</option>
            <option>production</option>
            <option>staging</option>
          </select>
        )}
      </Field>
      <button type="submit" disabled={create.isPending}>
        Create version
      </button>
      <ErrorText error={create.error} />
    </form>
  );
}
