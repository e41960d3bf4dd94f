import type { Kysely } from 'kysely';

/** `env_encrypted`: the version's `env` values are sealed with SECRETS_KEY (src/deployments/stored-secrets.ts). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('deployment_versions')
    .addColumn('env_encrypted', 'boolean', (col) => col.notNull().defaultTo(false))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deployment_versions').dropColumn('env_encrypted').execute();
}
