import type { Kysely } from 'kysely';
import type { Database, DeploymentVersionRow, Environment } from '../db/types.js';
import { badRequest, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import { newId } from '../ids.js';
import * as repo from './repository.js';
import type { CreateVersionInput } from './schemas.js';

const deploymentNotFound = () => notFound('Deployment not found');

function toDeployment(row: repo.DeploymentRecord) {
  const running = (id: string | null, number: number | null) =>
    id && number !== null ? { version_id: id, version_number: number } : null;
  return {
    id: row.id,
    name: row.name,
    environments: {
      production: running(row.production_version_id, row.production_number),
      staging: running(row.staging_version_id, row.staging_number),
    },
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

function toVersion(row: DeploymentVersionRow) {
  return {
    id: row.id,
    deployment_id: row.deployment_id,
    number: row.number,
    command: row.command,
    cwd: row.cwd,
    env_keys: Object.keys(row.env).sort(),
    timeout_seconds: row.timeout_seconds,
    created_at: toIso(row.created_at),
  };
}

export function createDeploymentService(db: Kysely<Database>) {
  async function get(orgId: string, id: string) {
    const row = await repo.findDeployment(db, orgId, id);
    if (!row) throw deploymentNotFound();
    return toDeployment(row);
  }

  return {
    get,

    async create(orgId: string, name: string) {
      const id = newId('dep');
      await repo.insertDeployment(db, { id, org_id: orgId, name });
      return get(orgId, id);
    },

    async list(orgId: string, page: { limit: number; offset: number }) {
      return (await repo.listDeployments(db, orgId, page)).map(toDeployment);
    },

    async createVersion(orgId: string, deploymentId: string, input: CreateVersionInput) {
      const row = await db.transaction().execute(async (trx) => {
        const number = await repo.nextVersionNumber(trx, orgId, deploymentId);
        if (number === undefined) throw deploymentNotFound();
        const version = await repo.insertVersion(trx, {
          id: newId('ver'),
          deployment_id: deploymentId,
          number,
          command: input.command,
          cwd: input.cwd ?? null,
          env: input.env,
          timeout_seconds: input.timeout_seconds ?? null,
        });
        if (input.environment) await repo.setRunningVersion(trx, deploymentId, input.environment, version.id);
        return version;
      });
      return toVersion(row);
    },

    async listVersions(orgId: string, deploymentId: string, page: { limit: number; offset: number }) {
      if (!(await repo.deploymentExists(db, orgId, deploymentId))) throw deploymentNotFound();
      return (await repo.listVersions(db, deploymentId, page)).map(toVersion);
    },

    async setEnvironment(orgId: string, deploymentId: string, environment: Environment, versionId: string | null) {
      if (!(await repo.deploymentExists(db, orgId, deploymentId))) throw deploymentNotFound();
      if (versionId !== null && !(await repo.findVersion(db, deploymentId, versionId))) {
        throw badRequest(`version_id: version ${versionId} does not belong to deployment ${deploymentId}`);
      }
      await repo.setRunningVersion(db, deploymentId, environment, versionId);
      return get(orgId, deploymentId);
    },

    /** The version a new run uses; the error messages are the ones SPEC §7 states. */
    async resolveRunningVersion(orgId: string, deploymentId: string, environment: Environment) {
      const version = await repo.findRunningVersion(db, orgId, deploymentId, environment);
      if (version) return version;
      if (!(await repo.deploymentExists(db, orgId, deploymentId))) throw deploymentNotFound();
      throw badRequest(`No running version found for ${environment} environment`);
    },
  };
}

export type DeploymentService = ReturnType<typeof createDeploymentService>;
