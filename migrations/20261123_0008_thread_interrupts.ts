import { type Kysely, sql } from 'kysely';

/**
 * Human in the loop and multitask strategies on threads (CONTRACTS §9, §10): a runner's opaque
 * checkpoint with each thread checkpoint, a thread's pending interrupts, the command a run resumes
 * with, and the run whose process a thread's next run waits to see stopped.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('thread_checkpoints').addColumn('checkpoint', 'jsonb').execute();
  await db.schema
    .alterTable('threads')
    .addColumn('interrupts', 'jsonb', (col) => col.notNull().defaultTo(sql`'[]'::jsonb`))
    // Set when a run's process may still be stopping while the thread already has its next run,
    // which starts only once the owner cleared it (or the owner's instance lease lapsed).
    .addColumn('stopping_run_id', 'text')
    .addColumn('stopping_instance_id', 'text')
    .execute();
  await db.schema.alterTable('runs').addColumn('command', 'jsonb').execute();
  // The next queued run of a thread, looked up whenever a thread's run ends.
  await db.schema
    .createIndex('runs_thread_pending_idx')
    .on('runs')
    .columns(['thread_id', 'created_at'])
    .where(sql.ref('status'), '=', 'pending')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('runs_thread_pending_idx').execute();
  await db.schema.alterTable('runs').dropColumn('command').execute();
  await db.schema
    .alterTable('threads')
    .dropColumn('interrupts')
    .dropColumn('stopping_run_id')
    .dropColumn('stopping_instance_id')
    .execute();
  await db.schema.alterTable('thread_checkpoints').dropColumn('checkpoint').execute();
}
