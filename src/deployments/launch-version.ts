import { sql } from 'kysely';

/**
 * Whether the version's deployment has variables, read with the version a run starts: a command
 * version without them starts as it is, with no query of its own before the runner is spawned.
 */
export function hasVariables(versionAlias: string) {
  const deploymentId = sql.ref(`${versionAlias}.deployment_id`);
  return sql<boolean>`exists (select 1 from deployment_variables dv where dv.deployment_id = ${deploymentId})`.as(
    'has_variables',
  );
}

/** What a runner of the version needs, as read with the run that starts it (alias: the versions table's). */
export function launchVersionColumns<A extends string>(alias: A) {
  return [
    `${alias}.id`,
    `${alias}.number`,
    `${alias}.command`,
    `${alias}.cwd`,
    `${alias}.env`,
    `${alias}.timeout_seconds`,
    `${alias}.source`,
    hasVariables(alias),
  ] as const;
}
