import { ApiError, unwrap } from '../client/index.js';
import { type Api, CliError } from './api.js';

const PAGE = 1000;

/**
 * The deployment with that id (`dep_…`) or name; created when `create` and no deployment has that name. An id that
 * names no deployment (nor is a deployment's name) is an error, never the name of a new deployment.
 */
export async function resolveDeployment(api: Api, nameOrId: string, create: boolean): Promise<string> {
  const isId = nameOrId.startsWith('dep_');
  if (isId) {
    try {
      return (await unwrap(api.client.GET('/v1/deployments/{id}', { params: { path: { id: nameOrId } } }))).id;
    } catch (error) {
      // A member key may not read deployments, but may run one by its id: the run's route checks it.
      if (error instanceof ApiError && error.status === 403) return nameOrId;
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    }
  }
  const found = await findByName(api, nameOrId);
  if (found) return found;
  if (isId) {
    throw new CliError(
      `No deployment ${nameOrId}: check the id (GET /v1/deployments lists them), or give a name to create a deployment`,
    );
  }
  if (!create)
    throw new CliError(`No deployment named ${nameOrId}: deploy it first (crewd deploy --deployment ${nameOrId})`);
  return (await unwrap(api.client.POST('/v1/deployments', { body: { name: nameOrId } }))).id;
}

async function findByName({ client }: Api, name: string): Promise<string | undefined> {
  for (let offset = 0; ; offset += PAGE) {
    const query = { limit: PAGE, offset };
    const { deployments } = await unwrap(client.GET('/v1/deployments', { params: { query } })).catch((error) => {
      if (!(error instanceof ApiError && error.status === 403)) throw error;
      throw new CliError(
        `Finding deployment ${name} by its name needs an admin API key: with this key, give its id (dep_…)`,
      );
    });
    const found = deployments.find((deployment) => deployment.name === name);
    if (found) return found.id;
    if (deployments.length < PAGE) return undefined;
  }
}
