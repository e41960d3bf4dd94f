import { type Kysely, sql, type Transaction } from 'kysely';
import type { VersionStatus } from '../db/schema/builds.js';
import type { Database } from '../db/types.js';

type Db = Kysely<Database> | Transaction<Database>;

export function insertBundle(db: Db, bundle: { sha256: string; size: number; data: Buffer }) {
  return db
    .insertInto('bundles')
    .values(bundle)
    .onConflict((oc) => oc.column('sha256').doNothing())
    .execute();
}

export function findBundleData(db: Db, sha256: string) {
  return db.selectFrom('bundles').select(['data']).where('sha256', '=', sha256).executeTakeFirst();
}

/** What builds, streams and runs read of a version, with its organization. */
const versionColumns = [
  'v.id',
  'v.deployment_id',
  'd.org_id',
  'v.source',
  'v.status',
  'v.build_error',
  'v.build_instance_id',
  'v.bundle_sha256',
  'v.env',
] as const;

/** A version with its organization, for builds, streams and runs. */
export function findVersionForBuild(db: Db, versionId: string) {
  return db
    .selectFrom('deployment_versions as v')
    .innerJoin('deployments as d', 'd.id', 'v.deployment_id')
    .select(versionColumns)
    .where('v.id', '=', versionId)
    .executeTakeFirst();
}

export type BuildVersionRecord = NonNullable<Awaited<ReturnType<typeof findVersionForBuild>>>;

/** The deployment's stored variables, for a build's import check (it imports the crew as a run would). */
export function findVariables(db: Db, deploymentId: string) {
  return db
    .selectFrom('deployment_variables')
    .select(['name', 'value', 'encrypted'])
    .where('deployment_id', '=', deploymentId)
    .execute();
}

/** Takes a building version's build for this instance; undefined when it is no longer building. */
export function claimBuild(db: Db, versionId: string, instanceId: string, previousInstance: string | null) {
  let query = db
    .updateTable('deployment_versions')
    .set({ build_instance_id: instanceId })
    .where('id', '=', versionId)
    .where('status', '=', 'building');
  query =
    previousInstance === null
      ? query.where('build_instance_id', 'is', null)
      : query.where('build_instance_id', '=', previousInstance);
  return query.returning(['id']).executeTakeFirst();
}

/**
 * Ends a build, with what its import check found of the version's tool schemas; undefined when the version was
 * deleted (or ended) meanwhile. Answers the promotion it waited for.
 */
export async function finishBuild(
  db: Transaction<Database>,
  versionId: string,
  status: Exclude<VersionStatus, 'building'>,
  error: string | null,
  toolSchemas: Record<string, unknown> | null = null,
) {
  const row = await db
    .selectFrom('deployment_versions')
    .select(['deployment_id', 'promote_to'])
    .where('id', '=', versionId)
    .where('status', '=', 'building')
    .forUpdate()
    .executeTakeFirst();
  if (!row) return undefined;
  await db
    .updateTable('deployment_versions')
    .set({
      status,
      build_error: error,
      promote_to: null,
      tool_schemas: toolSchemas === null ? null : JSON.stringify(toolSchemas),
    })
    .where('id', '=', versionId)
    .execute();
  return row;
}

/**
 * Builds left unfinished by an instance that is gone, or by this installation's previous life (an
 * instance of the same name: the data folder's lock lets one live at a time). `crashed` when that
 * instance ended without stopping (its lease lapsed, or it is this installation's previous life):
 * then the build may well be what ended it.
 */
export function findOrphanedBuilds(db: Db, instanceId: string) {
  const ownName = sql<string>`(select own.name from instances as own where own.id = ${instanceId})`;
  return db
    .selectFrom('deployment_versions as v')
    .innerJoin('deployments as d', 'd.id', 'v.deployment_id')
    .leftJoin('instances as i', 'i.id', 'v.build_instance_id')
    .select([
      'v.id',
      'd.org_id',
      'v.build_instance_id',
      sql<boolean>`(i.id is not null and i.stopped_at is null)`.as('crashed'),
    ])
    .where('v.status', '=', 'building')
    .where(({ or, eb }) =>
      or([
        eb('v.build_instance_id', 'is', null),
        eb.and([
          eb('v.build_instance_id', '<>', instanceId),
          or([
            eb('i.id', 'is', null),
            eb('i.stopped_at', 'is not', null),
            eb('i.expires_at', '<=', sql<Date>`now()`),
            eb('i.name', '=', ownName),
          ]),
        ]),
      ]),
    )
    .orderBy('v.created_at')
    .execute();
}

/** Fails a build its instance left unfinished; undefined when it ended or was taken meanwhile. */
export function failOrphanedBuild(db: Db, versionId: string, previousInstance: string, error: string) {
  return db
    .updateTable('deployment_versions')
    .set({ status: 'failed', build_error: error, promote_to: null })
    .where('id', '=', versionId)
    .where('status', '=', 'building')
    .where('build_instance_id', '=', previousInstance)
    .returning(['id'])
    .executeTakeFirst();
}

export async function lastEventSeq(db: Db, id: string): Promise<number> {
  const row = await db
    .selectFrom('run_events')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .where('run_id', '=', id)
    .executeTakeFirst();
  return Number(row?.seq ?? 0);
}

export function deleteEvents(db: Db, id: string) {
  return db.deleteFrom('run_events').where('run_id', '=', id).execute();
}

/** Which of these versions still exist. */
export async function existingVersionIds(db: Db, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('deployment_versions').select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((row) => row.id));
}
