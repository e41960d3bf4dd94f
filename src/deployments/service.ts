import type { Kysely } from 'kysely';
import type { InstanceCaches } from '../cache/instance-caches.js';
import type { Database, DeploymentVersionRow, Environment } from '../db/types.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import { newId } from '../ids.js';
import * as repo from './repository.js';
import type { CreateVersionInput } from './schemas.js';
import type { StoredSecrets } from './stored-secrets.js';

const deploymentNotFound = () => notFound('Deployment not found');

function toDeployment(row: repo.DeploymentRecord) {
  const running = (id: string | null, number: number | null) =>
    id && number !== null ? { version_id: id, version_number: number } : null;
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    mcp: row.mcp,
    environments: {
      production: running(row.production_version_id, row.production_number),
      staging: running(row.staging_version_id, row.staging_number),
    },
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

type VersionFields = Pick<
  DeploymentVersionRow,
  | 'id'
  | 'deployment_id'
  | 'number'
  | 'command'
  | 'cwd'
  | 'env'
  | 'timeout_seconds'
  | 'created_at'
  | 'source'
  | 'status'
  | 'build_error'
  | 'runtime'
  | 'entrypoint'
  | 'bundle_sha256'
  | 'bundle_size'
>;

export const versionNotFound = () => notFound('Version not found');

export function toVersion(row: VersionFields) {
  return {
    id: row.id,
    deployment_id: row.deployment_id,
    number: row.number,
    command: row.command,
    cwd: row.cwd,
    env_keys: Object.keys(row.env).sort(),
    timeout_seconds: row.timeout_seconds,
    source: row.source,
    status: row.status,
    build_error: row.build_error,
    runtime: row.runtime,
    entrypoint: row.entrypoint,
    bundle: row.bundle_sha256 ? { sha256: row.bundle_sha256, size: row.bundle_size ?? 0 } : null,
    created_at: toIso(row.created_at),
  };
}

/**
 * `secrets` seals a command version's env with SECRETS_KEY as it is stored. A deployment created or renamed drops
 * `caches`' graph deployments (what a LangGraph graph name names) on every instance.
 */
export function createDeploymentService(
  db: Kysely<Database>,
  secrets?: Pick<StoredSecrets, 'storedEnv'>,
  caches?: Pick<InstanceCaches, 'changing'>,
) {
  const naming = <T>(change: (db: Kysely<Database>) => Promise<T>): Promise<T> =>
    caches ? caches.changing('deployments', change) : change(db);

  async function get(orgId: string, id: string) {
    const row = await repo.findDeployment(db, orgId, id);
    if (!row) throw deploymentNotFound();
    return toDeployment(row);
  }

  return {
    get,

    async create(orgId: string, name: string, options: { description?: string | null; mcp?: boolean } = {}) {
      const id = newId('dep');
      await naming((trx) => repo.insertDeployment(trx, { id, org_id: orgId, name, ...options }));
      return get(orgId, id);
    },

    async update(orgId: string, id: string, changes: { name?: string; description?: string | null; mcp?: boolean }) {
      const update = (trx: Kysely<Database>) => repo.updateDeployment(trx, orgId, id, changes);
      if (!(await (changes.name === undefined ? update(db) : naming(update)))) throw deploymentNotFound();
      return get(orgId, id);
    },

    async list(orgId: string, page: { limit: number; offset: number }) {
      return (await repo.listDeployments(db, orgId, page)).map(toDeployment);
    },

    async createVersion(orgId: string, deploymentId: string, input: CreateVersionInput) {
      const row = await db.transaction().execute(async (trx) => {
        const number = await repo.nextVersionNumber(trx, orgId, deploymentId);
        if (number === undefined) throw deploymentNotFound();
        const id = newId('ver');
        const version = await repo.insertVersion(trx, {
          id,
          deployment_id: deploymentId,
          number,
          command: input.command,
          cwd: input.cwd ?? null,
          ...(secrets ? secrets.storedEnv(id, input.env) : { env: input.env }),
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

    async getVersion(orgId: string, deploymentId: string, versionId: string) {
      if (!(await repo.deploymentExists(db, orgId, deploymentId))) throw deploymentNotFound();
      const row = await repo.findVersion(db, deploymentId, versionId);
      if (!row) throw versionNotFound();
      return toVersion(row);
    },

    /** CONTRACTS §8: only ready versions run in an environment. */
    async setEnvironment(orgId: string, deploymentId: string, environment: Environment, versionId: string | null) {
      await db.transaction().execute(async (trx) => {
        if (!(await repo.lockDeployment(trx, orgId, deploymentId))) throw deploymentNotFound();
        if (versionId !== null) {
          const version = await repo.findVersion(trx, deploymentId, versionId);
          if (!version) {
            throw badRequest(`version_id: version ${versionId} does not belong to deployment ${deploymentId}`);
          }
          if (version.status !== 'ready') throw conflict(`Version ${versionId} is not ready: ${version.status}`);
        }
        await repo.setRunningVersion(trx, deploymentId, environment, versionId);
      });
      return get(orgId, deploymentId);
    },

    /**
     * Deletes a version with its runs, stored build log and (when no other version shares it) its
     * bundle; refused while an environment runs it or a run of it is pending or running.
     */
    async deleteVersion(orgId: string, deploymentId: string, versionId: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const deployment = await repo.lockDeployment(trx, orgId, deploymentId);
        if (!deployment) throw deploymentNotFound();
        for (const environment of ['production', 'staging'] as const) {
          if (deployment[`${environment}_version_id`] === versionId) {
            throw conflict(`Version ${versionId} is the running version of ${environment}`);
          }
        }
        const active = await repo.findActiveRunOfVersion(trx, versionId);
        if (active) throw conflict(`Version ${versionId} has a ${active.status} run: ${active.id}`);
        const deleted = await repo.deleteVersion(trx, deploymentId, versionId);
        if (!deleted) throw versionNotFound();
        if (deleted.bundle_sha256) await repo.deleteBundleIfUnused(trx, deleted.bundle_sha256);
      });
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
