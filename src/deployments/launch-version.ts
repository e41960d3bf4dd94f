import { sql } from 'kysely';

/** A deployment variable as stored: `value` is sealed when `encrypted` (see variables.ts). */
export interface StoredVariable {
  name: string;
  value: string;
  encrypted: boolean;
}

/**
 * The version's deployment's stored variables (null when it has none), read with the version a run
 * starts, so that starting it needs no query of its own: a command version without them starts as
 * it is; the others are prepared from this row (src/builds).
 */
export function storedVariables(versionAlias: string) {
  const deploymentId = sql.ref(`${versionAlias}.deployment_id`);
  return sql<StoredVariable[] | null>`(select json_agg(json_build_object('name', dv.name, 'value', dv.value,
    'encrypted', dv.encrypted)) from deployment_variables dv where dv.deployment_id = ${deploymentId})`.as('variables');
}

/** What a runner of the version needs, as read with the run that starts it (alias: the versions table's). */
export function launchVersionColumns<A extends string>(alias: A) {
  return [
    `${alias}.id`,
    `${alias}.number`,
    `${alias}.command`,
    `${alias}.cwd`,
    `${alias}.env`,
    `${alias}.env_encrypted`,
    `${alias}.timeout_seconds`,
    `${alias}.source`,
    `${alias}.status`,
    `${alias}.bundle_sha256`,
    storedVariables(alias),
  ] as const;
}
