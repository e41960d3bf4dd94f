import { type Command, Option } from 'commander';
import { unwrap } from '../client/index.js';
import type { components } from '../client/schema.js';
import { type Api, CliError } from './api.js';
import type { CliContext } from './context.js';
import { resolveDeployment } from './deployments.js';
import { limitOption } from './json-option.js';
import { writeRows } from './output.js';

type Version = components['schemas']['DeploymentVersion'];
type Environment = 'production' | 'staging';
const environmentOption = () =>
  new Option('--environment <environment>', 'the environment').choices(['production', 'staging']).default('production');

async function listVersions(api: Api, deploymentId: string, limit = 1000): Promise<Version[]> {
  const params = { path: { id: deploymentId }, query: { limit } };
  return (await unwrap(api.client.GET('/v1/deployments/{id}/versions', { params }))).versions;
}

/** A version given by its id (`ver_…`) or its number within the deployment. */
async function findVersion(api: Api, deploymentId: string, given: string): Promise<Version> {
  const found = (await listVersions(api, deploymentId)).find((v) => v.id === given || String(v.number) === given);
  if (!found) throw new CliError(`No version ${given} in this deployment: \`crewd versions <deployment>\` lists them`);
  return found;
}

async function setRunning(api: Api, deploymentId: string, environment: Environment, versionId: string) {
  const params = { path: { id: deploymentId, environment } };
  return unwrap(
    api.client.PUT('/v1/deployments/{id}/environments/{environment}', { params, body: { version_id: versionId } }),
  );
}

/** The ready version before the one running in `environment`: what a rollback goes back to. */
async function previousReady(api: Api, deploymentId: string, environment: Environment): Promise<Version> {
  const deployment = await unwrap(api.client.GET('/v1/deployments/{id}', { params: { path: { id: deploymentId } } }));
  const running = deployment.environments[environment];
  if (!running) throw new CliError(`Nothing runs in ${environment}: promote a version first (crewd promote)`);
  const earlier = (await listVersions(api, deploymentId)).filter(
    (v) => v.status === 'ready' && v.number < running.version_number,
  );
  const previous = earlier.sort((a, b) => b.number - a.number)[0];
  if (!previous) throw new CliError(`No ready version before version ${running.version_number} to roll back to`);
  return previous;
}

export function deploymentsCommand(program: Command, { api, io }: CliContext) {
  program
    .command('deployments')
    .description('Deployments: id, name, production version, staging version')
    .option('--limit <n>', 'at most this many (1 to 1000)', limitOption, 50)
    .option('--json', 'print the answer as JSON')
    .action(async (options: { limit: number; json?: boolean }) => {
      const query = { limit: options.limit };
      const { deployments } = await unwrap(api().client.GET('/v1/deployments', { params: { query } }));
      if (options.json) return io.out(JSON.stringify({ deployments }));
      const number = (running: { version_number: number } | null) => (running ? `v${running.version_number}` : null);
      writeRows(
        io,
        deployments.map((d) => [d.id, d.name, number(d.environments.production), number(d.environments.staging)]),
      );
    });
}

export function versionsCommands(program: Command, { api, io }: CliContext) {
  program
    .command('versions')
    .description("A deployment's versions, newest first: id, number, status, source, created_at, build_error")
    .argument('<deployment>', 'name or id')
    .option('--limit <n>', 'at most this many (1 to 1000)', limitOption, 50)
    .option('--json', 'print the answer as JSON')
    .action(async (deployment: string, options: { limit: number; json?: boolean }) => {
      const versions = await listVersions(api(), await resolveDeployment(api(), deployment, false), options.limit);
      if (options.json) return io.out(JSON.stringify({ versions }));
      const firstLine = (text: string | null) => text?.split('\n')[0] ?? null;
      writeRows(
        io,
        versions.map((v) => [v.id, v.number, v.status, v.source, v.created_at, firstLine(v.build_error)]),
      );
    });
  program
    .command('promote')
    .description("Make a ready version an environment's running version")
    .argument('<deployment>', 'name or id')
    .argument('<version>', 'id (ver_…) or number')
    .addOption(environmentOption())
    .option('--json', 'print the deployment as JSON')
    .action(async (deployment: string, given: string, options: { environment: Environment; json?: boolean }) => {
      const id = await resolveDeployment(api(), deployment, false);
      const version = await findVersion(api(), id, given);
      const updated = await setRunning(api(), id, options.environment, version.id);
      if (options.json) return io.out(JSON.stringify(updated));
      io.err(`Version ${version.number} (${version.id}) now runs in ${options.environment}`);
    });
  program
    .command('rollback')
    .description("Go back to the ready version before the environment's running one (or --to a version)")
    .argument('<deployment>', 'name or id')
    .addOption(environmentOption())
    .option('--to <version>', 'id (ver_…) or number of the version to go back to')
    .option('--json', 'print the deployment as JSON')
    .action(async (deployment: string, options: { environment: Environment; to?: string; json?: boolean }) => {
      const id = await resolveDeployment(api(), deployment, false);
      const version = options.to
        ? await findVersion(api(), id, options.to)
        : await previousReady(api(), id, options.environment);
      const updated = await setRunning(api(), id, options.environment, version.id);
      if (options.json) return io.out(JSON.stringify(updated));
      io.err(`Rolled back: version ${version.number} (${version.id}) now runs in ${options.environment}`);
    });
}
