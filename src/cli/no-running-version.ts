import { ApiError, type Schemas, unwrap } from '../client/index.js';
import { type Api, CliError } from './api.js';

type Version = Schemas['DeploymentVersion'];

/** The service's answer to a run of an environment nothing runs in (its wording is fixed by the API's contract). */
const NO_RUNNING_VERSION = /^No running version found for (production|staging) environment$/;

/**
 * The error of a run that could not start, with why nothing runs in its environment and what to do, as the
 * deployment's versions tell (a build still going on, one that failed, a ready version never promoted); other errors
 * as they are. A key that may not list versions (a member key) gets what to do in general.
 */
export async function explainNoRunningVersion(
  api: Api,
  error: unknown,
  deployment: string,
  deploymentId: string,
): Promise<unknown> {
  const environment = error instanceof ApiError ? NO_RUNNING_VERSION.exec(error.message)?.[1] : undefined;
  if (!environment) return error;
  const why = await whyNothingRuns(api, deployment, deploymentId, environment).catch(
    () =>
      `deploy a version there (crewd deploy <folder> --deployment ${deployment} --environment ${environment}) ` +
      `or promote a ready one (crewd promote ${deployment} <version>${environmentFlag(environment)})`,
  );
  return new CliError(`${(error as ApiError).message}: ${why}`);
}

async function whyNothingRuns(api: Api, deployment: string, id: string, environment: string): Promise<string> {
  const params = { path: { id }, query: { limit: 50 } };
  const { versions } = await unwrap(api.client.GET('/v1/deployments/{id}/versions', { params }));
  const [newest] = versions;
  if (!newest) {
    return `${deployment} has no version yet: crewd deploy <folder> --deployment ${deployment} --environment ${environment}`;
  }
  if (newest.status === 'building') {
    return (
      `version ${newest.number} (${newest.id}) is still building (crewd builds log ${newest.id} --follow shows it); ` +
      `deployed with --environment ${environment}, it runs there once ready, else: ${promote(deployment, newest, environment)}`
    );
  }
  const ready = versions.find((version) => version.status === 'ready');
  if (ready)
    return `version ${ready.number} is ready but not running there: ${promote(deployment, ready, environment)}`;
  const error = newest.build_error?.split('\n')[0] ?? 'no reason kept';
  return (
    `version ${newest.number} (${newest.id}) failed to build: ${error} (crewd builds log ${newest.id} shows its log); ` +
    `fix the project and deploy it again with --environment ${environment}`
  );
}

const environmentFlag = (environment: string) => (environment === 'production' ? '' : ` --environment ${environment}`);

const promote = (deployment: string, version: Version, environment: string) =>
  `crewd promote ${deployment} ${version.number}${environmentFlag(environment)}`;
