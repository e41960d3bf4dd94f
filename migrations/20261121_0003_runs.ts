import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // One row per incarnation of a crewd process; a lapsed lease means its runs are lost.
  await db.schema
    .createTable('instances')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('started_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('heartbeat_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .addColumn('stopped_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('instances_name_idx').on('instances').column('name').execute();

  await db.schema
    .createTable('runs')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('org_id', 'text', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('deployment_id', 'text', (col) => col.notNull().references('deployments.id').onDelete('cascade'))
    .addColumn('version_id', 'text', (col) => col.notNull().references('deployment_versions.id').onDelete('cascade'))
    .addColumn('environment', 'text', (col) => col.notNull().check(sql`environment in ('production', 'staging')`))
    .addColumn('thread_id', 'text')
    .addColumn('status', 'text', (col) =>
      col.notNull().check(sql`status in ('pending', 'running', 'succeeded', 'failed', 'canceled')`),
    )
    .addColumn('input', 'jsonb', (col) => col.notNull())
    .addColumn('output', 'jsonb')
    .addColumn('error_message', 'text')
    .addColumn('instance_id', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn('started_at', 'timestamptz')
    .addColumn('completed_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('runs_org_created_idx').on('runs').columns(['org_id', 'created_at', 'id']).execute();
  await db.schema
    .createIndex('runs_deployment_created_idx')
    .on('runs')
    .columns(['deployment_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('runs_thread_created_idx')
    .on('runs')
    .columns(['thread_id', 'created_at'])
    .where(sql.ref('thread_id'), 'is not', null)
    .execute();
  // The queue of runs waiting for a slot, oldest first.
  await db.schema
    .createIndex('runs_pending_idx')
    .on('runs')
    .columns(['created_at', 'id'])
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  await db.schema
    .createIndex('runs_running_instance_idx')
    .on('runs')
    .column('instance_id')
    .where(sql.ref('status'), '=', 'running')
    .execute();

  await db.schema
    .createTable('run_events')
    .addColumn('run_id', 'text', (col) => col.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('data', 'jsonb', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('run_events_pkey', ['run_id', 'seq'])
    .execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('org_id', 'text', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('scope', 'text', (col) => col.notNull())
    .addColumn('key', 'text', (col) => col.notNull())
    .addColumn('request_hash', 'text', (col) => col.notNull())
    .addColumn('response', 'jsonb')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['org_id', 'scope', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_created_idx').on('idempotency_keys').column('created_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.dropTable('run_events').execute();
  await db.schema.dropTable('runs').execute();
  await db.schema.dropTable('instances').execute();
}
