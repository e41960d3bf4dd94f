import type { Db, Environment } from '../db/types.js';
import { launchVersionColumns } from './launch-version.js';

const deploymentColumns = [
  'deployments.id',
  'deployments.name',
  'deployments.description',
  'deployments.mcp',
  'deployments.created_at',
  'deployments.updated_at',
  'deployments.production_version_id',
  'deployments.staging_version_id',
] as const;

const versionColumns = [
  'id',
  'deployment_id',
  'number',
  'command',
  'cwd',
  'env',
  'timeout_seconds',
  'created_at',
  'source',
  'status',
  'build_error',
  'runtime',
  'entrypoint',
  'bundle_sha256',
  'bundle_size',
] as const;

/** Deployments with the numbers of their running versions. */
function selectDeployments(db: Db) {
  return db
    .selectFrom('deployments')
    .leftJoin('deployment_versions as prod', 'prod.id', 'deployments.production_version_id')
    .leftJoin('deployment_versions as stag', 'stag.id', 'deployments.staging_version_id')
    .select([...deploymentColumns, 'prod.number as production_number', 'stag.number as staging_number']);
}

export function findDeployment(db: Db, orgId: string, id: string) {
  return selectDeployments(db)
    .where('deployments.org_id', '=', orgId)
    .where('deployments.id', '=', id)
    .executeTakeFirst();
}

export function listDeployments(db: Db, orgId: string, page: { limit: number; offset: number }) {
  return selectDeployments(db)
    .where('deployments.org_id', '=', orgId)
    .orderBy('deployments.created_at', 'desc')
    .orderBy('deployments.id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export type DeploymentRecord = NonNullable<Awaited<ReturnType<typeof findDeployment>>>;

export function insertDeployment(
  db: Db,
  row: { id: string; org_id: string; name: string; description?: string | null; mcp?: boolean },
) {
  return db.insertInto('deployments').values(row).execute();
}

/** Changes a deployment's name, description or MCP switch; false when the organization has no such deployment. */
export async function updateDeployment(
  db: Db,
  orgId: string,
  id: string,
  changes: { name?: string; description?: string | null; mcp?: boolean },
): Promise<boolean> {
  const result = await db
    .updateTable('deployments')
    .set({ ...changes, updated_at: new Date() })
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Claims the next version number; the row lock serialises concurrent version creation. */
export async function nextVersionNumber(db: Db, orgId: string, deploymentId: string): Promise<number | undefined> {
  const row = await db
    .updateTable('deployments')
    .set((eb) => ({ version_count: eb('version_count', '+', 1) }))
    .where('org_id', '=', orgId)
    .where('id', '=', deploymentId)
    .returning('version_count')
    .executeTakeFirst();
  return row?.version_count;
}

export function insertVersion(
  db: Db,
  row: {
    id: string;
    deployment_id: string;
    number: number;
    command: string[];
    cwd: string | null;
    env: Record<string, string>;
    /** `env`'s values are sealed (stored-secrets.ts). */
    env_encrypted?: boolean;
    timeout_seconds: number | null;
    bundle?: {
      runtime: 'python' | 'node' | null;
      entrypoint: Record<string, unknown>;
      sha256: string;
      size: number;
      promote_to: Environment | null;
    };
  },
) {
  const { bundle, ...plain } = row;
  const built = bundle && {
    source: 'bundle' as const,
    status: 'building' as const,
    runtime: bundle.runtime,
    entrypoint: JSON.stringify(bundle.entrypoint),
    bundle_sha256: bundle.sha256,
    bundle_size: bundle.size,
    promote_to: bundle.promote_to,
  };
  return db
    .insertInto('deployment_versions')
    .values({ ...plain, ...built, command: JSON.stringify(row.command), env: JSON.stringify(row.env) })
    .returning(versionColumns)
    .executeTakeFirstOrThrow();
}

export function findVersion(db: Db, deploymentId: string, versionId: string) {
  return db
    .selectFrom('deployment_versions')
    .select(versionColumns)
    .where('deployment_id', '=', deploymentId)
    .where('id', '=', versionId)
    .executeTakeFirst();
}

export function listVersions(db: Db, deploymentId: string, page: { limit: number; offset: number }) {
  return db
    .selectFrom('deployment_versions')
    .select(versionColumns)
    .where('deployment_id', '=', deploymentId)
    .orderBy('number', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

/** Locks the deployment row, so a version is not promoted while it is being deleted. */
export function lockDeployment(db: Db, orgId: string, deploymentId: string) {
  return db
    .selectFrom('deployments')
    .select(['id', 'production_version_id', 'staging_version_id'])
    .where('org_id', '=', orgId)
    .where('id', '=', deploymentId)
    .forUpdate()
    .executeTakeFirst();
}

export function findActiveRunOfVersion(db: Db, versionId: string) {
  return db
    .selectFrom('runs')
    .select(['id', 'status'])
    .where('version_id', '=', versionId)
    .where('status', 'in', ['pending', 'running'])
    .limit(1)
    .executeTakeFirst();
}

export function deleteVersion(db: Db, deploymentId: string, versionId: string) {
  return db
    .deleteFrom('deployment_versions')
    .where('deployment_id', '=', deploymentId)
    .where('id', '=', versionId)
    .returning(['bundle_sha256'])
    .executeTakeFirst();
}

/** Removes a bundle no version refers to any more. */
export function deleteBundleIfUnused(db: Db, sha256: string) {
  return db
    .deleteFrom('bundles')
    .where('sha256', '=', sha256)
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('deployment_versions').select('id').where('bundle_sha256', '=', sha256))),
    )
    .execute();
}

export function setRunningVersion(db: Db, deploymentId: string, environment: Environment, versionId: string | null) {
  const column = environment === 'production' ? 'production_version_id' : 'staging_version_id';
  return db
    .updateTable('deployments')
    .set({ [column]: versionId, updated_at: new Date() })
    .where('id', '=', deploymentId)
    .execute();
}

/** The version an environment runs, with what a runner needs; undefined when none is set. */
export function findRunningVersion(db: Db, orgId: string, deploymentId: string, environment: Environment) {
  const column = environment === 'production' ? 'deployments.production_version_id' : 'deployments.staging_version_id';
  return db
    .selectFrom('deployments')
    .innerJoin('deployment_versions as v', 'v.id', column)
    .select([...launchVersionColumns('v'), 'v.deployment_id'])
    .where('deployments.org_id', '=', orgId)
    .where('deployments.id', '=', deploymentId)
    .executeTakeFirst();
}

export function deploymentExists(db: Db, orgId: string, deploymentId: string) {
  return db
    .selectFrom('deployments')
    .select('id')
    .where('org_id', '=', orgId)
    .where('id', '=', deploymentId)
    .executeTakeFirst();
}
