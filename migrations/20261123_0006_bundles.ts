import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Uploaded projects, stored once per content: every instance can build every version from here.
  await db.schema
    .createTable('bundles')
    .addColumn('sha256', 'text', (col) => col.primaryKey())
    .addColumn('size', 'integer', (col) => col.notNull())
    .addColumn('data', 'bytea', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .alterTable('deployment_versions')
    .addColumn('source', 'text', (col) =>
      col.notNull().defaultTo('command').check(sql`source in ('command', 'bundle')`),
    )
    .addColumn('status', 'text', (col) =>
      col.notNull().defaultTo('ready').check(sql`status in ('building', 'ready', 'failed')`),
    )
    .addColumn('build_error', 'text')
    .addColumn('runtime', 'text', (col) => col.check(sql`runtime in ('python', 'node')`))
    .addColumn('entrypoint', 'jsonb')
    .addColumn('bundle_sha256', 'text', (col) => col.references('bundles.sha256'))
    .addColumn('bundle_size', 'integer')
    // The environment a promotion waits for: becomes the running version once the build succeeds.
    .addColumn('promote_to', 'text', (col) => col.check(sql`promote_to in ('production', 'staging')`))
    .addColumn('build_instance_id', 'text')
    .execute();
  await db.schema
    .createIndex('deployment_versions_bundle_idx')
    .on('deployment_versions')
    .column('bundle_sha256')
    .where(sql.ref('bundle_sha256'), 'is not', null)
    .execute();

  // Build logs share the run event log, keyed by the version id: the table no longer points at runs
  // only, so the events of a deleted run or version are removed by these triggers instead.
  await sql`alter table run_events drop constraint if exists run_events_run_id_fkey`.execute(db);
  await sql`
    create function crewd_delete_events_of() returns trigger language plpgsql as $$
    begin
      delete from run_events where run_id = old.id;
      return old;
    end $$`.execute(db);
  await sql`create trigger runs_delete_events after delete on runs
    for each row execute function crewd_delete_events_of()`.execute(db);
  await sql`create trigger versions_delete_events after delete on deployment_versions
    for each row execute function crewd_delete_events_of()`.execute(db);

  await db.schema
    .createTable('deployment_variables')
    .addColumn('deployment_id', 'text', (col) => col.notNull().references('deployments.id').onDelete('cascade'))
    .addColumn('name', 'text', (col) => col.notNull())
    // The value as it is, or `<iv>.<tag>.<ciphertext>` (base64, AES-256-GCM) when `encrypted`.
    .addColumn('value', 'text', (col) => col.notNull())
    .addColumn('encrypted', 'boolean', (col) => col.notNull())
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('deployment_variables_pkey', ['deployment_id', 'name'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('deployment_variables').execute();
  await sql`drop trigger if exists versions_delete_events on deployment_versions`.execute(db);
  await sql`drop trigger if exists runs_delete_events on runs`.execute(db);
  await sql`drop function if exists crewd_delete_events_of()`.execute(db);
  await db.schema.dropIndex('deployment_versions_bundle_idx').execute();
  await db.schema
    .alterTable('deployment_versions')
    .dropColumn('build_instance_id')
    .dropColumn('promote_to')
    .dropColumn('bundle_size')
    .dropColumn('bundle_sha256')
    .dropColumn('entrypoint')
    .dropColumn('runtime')
    .dropColumn('build_error')
    .dropColumn('status')
    .dropColumn('source')
    .execute();
  await db.schema.dropTable('bundles').execute();
}
