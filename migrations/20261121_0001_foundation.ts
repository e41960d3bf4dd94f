import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('organizations')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('org_id', 'text', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('role', 'text', (col) => col.notNull().check(sql`role in ('admin', 'member')`))
    .addColumn('key_hash', 'text', (col) => col.notNull().unique())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('api_keys_org_idx').on('api_keys').column('org_id').execute();

  await db.schema
    .createTable('deployments')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('org_id', 'text', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('production_version_id', 'text')
    .addColumn('staging_version_id', 'text')
    .addColumn('version_count', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('deployments_org_idx').on('deployments').columns(['org_id', 'created_at']).execute();

  await db.schema
    .createTable('deployment_versions')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('deployment_id', 'text', (col) => col.notNull().references('deployments.id').onDelete('cascade'))
    .addColumn('number', 'integer', (col) => col.notNull())
    .addColumn('command', 'jsonb', (col) => col.notNull())
    .addColumn('cwd', 'text')
    .addColumn('env', 'jsonb', (col) => col.notNull())
    .addColumn('timeout_seconds', 'double precision')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('deployment_versions_number_unique', ['deployment_id', 'number'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('deployment_versions').execute();
  await db.schema.dropTable('deployments').execute();
  await db.schema.dropTable('api_keys').execute();
  await db.schema.dropTable('organizations').execute();
}
