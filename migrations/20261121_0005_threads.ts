import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('threads')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('org_id', 'text', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('deployment_id', 'text', (col) => col.notNull().references('deployments.id').onDelete('cascade'))
    .addColumn('status', 'text', (col) => col.notNull().check(sql`status in ('idle', 'busy', 'interrupted', 'error')`))
    .addColumn('metadata', 'jsonb', (col) => col.notNull())
    .addColumn('values', 'jsonb')
    // The run the thread is busy with; set and cleared with the status.
    .addColumn('active_run_id', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
  await db.schema
    .createIndex('threads_deployment_created_idx')
    .on('threads')
    .columns(['org_id', 'deployment_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('thread_checkpoints')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('thread_id', 'text', (col) => col.notNull().references('threads.id').onDelete('cascade'))
    .addColumn('run_id', 'text')
    .addColumn('values', 'jsonb')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
  await db.schema
    .createIndex('thread_checkpoints_thread_created_idx')
    .on('thread_checkpoints')
    .columns(['thread_id', 'created_at'])
    .execute();

  // A deleted thread leaves its runs, no longer tied to it.
  await db.schema
    .alterTable('runs')
    .addForeignKeyConstraint('runs_thread_fk', ['thread_id'], 'threads', ['id'], (cb) => cb.onDelete('set null'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('runs').dropConstraint('runs_thread_fk').execute();
  await db.schema.dropTable('thread_checkpoints').execute();
  await db.schema.dropTable('threads').execute();
}
