import type { Kysely } from 'kysely';

/**
 * `usage`: the run's LLM calls summed by model, with their cost (CONTRACTS §15); null until a call
 * is reported. `trace_id`: the run's OpenTelemetry trace, set when tracing is on;
 * `trace_parent_id`: the caller's span (from `traceparent`) the run's span hangs under.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('runs')
    .addColumn('usage', 'jsonb')
    .addColumn('trace_id', 'text')
    .addColumn('trace_parent_id', 'text')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('runs').dropColumn('usage').dropColumn('trace_id').dropColumn('trace_parent_id').execute();
}
