import { type Kysely, sql } from 'kysely';

/**
 * The /mcp tools/call requests being answered, by organization, API key, the client's Mcp-Session-Id and JSON-RPC
 * request id, with the run each started: a `notifications/cancelled` that reaches another instance than the one
 * answering the call finds the run here and cancels it (docs/mcp.md). A cancellation that comes before its call's
 * run exists is kept (`canceled_at`, no `run_id`) for the call to find. A row goes when its call is answered.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('mcp_calls')
    .addColumn('org_id', 'text', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('key_id', 'text', (col) => col.notNull())
    .addColumn('session_id', 'text', (col) => col.notNull())
    .addColumn('request_id', 'text', (col) => col.notNull())
    // No foreign key: checking one locks the run's row (FOR KEY SHARE) just when the run queue claims it with
    // FOR UPDATE SKIP LOCKED, which then passes the run over until its next look (tens of milliseconds per call).
    .addColumn('run_id', 'text')
    .addColumn('canceled_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .addPrimaryKeyConstraint('mcp_calls_pk', ['org_id', 'key_id', 'session_id', 'request_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mcp_calls').execute();
}
