import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('crons')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('org_id', 'text', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('deployment_id', 'text', (col) => col.notNull().references('deployments.id').onDelete('cascade'))
    .addColumn('schedule', 'text', (col) => col.notNull())
    .addColumn('timezone', 'text', (col) => col.notNull())
    .addColumn('input', 'jsonb', (col) => col.notNull())
    .addColumn('environment', 'text', (col) => col.notNull().check(sql`environment in ('production', 'staging')`))
    // A cron of a deleted thread has nowhere to run: it goes with the thread.
    .addColumn('thread_id', 'text', (col) => col.references('threads.id').onDelete('cascade'))
    .addColumn('multitask_strategy', 'text', (col) =>
      col.notNull().check(sql`multitask_strategy in ('reject', 'enqueue', 'interrupt', 'rollback')`),
    )
    .addColumn('enabled', 'boolean', (col) => col.notNull())
    // Null while disabled. The scheduler starts a run once this has passed, then moves it to the next time after now.
    .addColumn('next_run_at', 'timestamptz')
    // Set while an instance starts the run of a due time; a lapsed claim (a crashed instance) is taken again.
    .addColumn('claimed_until', 'timestamptz')
    .addColumn('last_run_at', 'timestamptz')
    .addColumn('last_run_id', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
  await db.schema.createIndex('crons_org_created_idx').on('crons').columns(['org_id', 'created_at', 'id']).execute();
  await db.schema
    .createIndex('crons_next_run_idx')
    .on('crons')
    .column('next_run_at')
    .where(sql.ref('next_run_at'), 'is not', null)
    .execute();

  // No foreign key: a finished run never changes, so the runs of a deleted cron keep naming it.
  await db.schema.alterTable('runs').addColumn('cron_id', 'text').addColumn('cron_due_at', 'timestamptz').execute();
  // One run per due time of a cron, whichever instance starts it and however often it is tried.
  await db.schema
    .createIndex('runs_cron_due_idx')
    .unique()
    .on('runs')
    .columns(['cron_id', 'cron_due_at'])
    .where(sql.ref('cron_id'), 'is not', null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('runs').dropColumn('cron_due_at').dropColumn('cron_id').execute();
  await db.schema.dropTable('crons').execute();
}
