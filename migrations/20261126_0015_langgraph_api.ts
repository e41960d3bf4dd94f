import { type Kysely, sql } from 'kysely';

/**
 * The LangGraph Agent Server API (CONTRACTS §14): assistants made through it (with their versions),
 * the key-value store per organization, and threads made through it, which have no deployment
 * until their first run binds them to its assistant's.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('langgraph_assistants')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('org_id', 'text', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('deployment_id', 'text', (col) => col.notNull().references('deployments.id').onDelete('cascade'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('description', 'text')
    .addColumn('config', 'jsonb', (col) => col.notNull())
    .addColumn('context', 'jsonb', (col) => col.notNull())
    .addColumn('metadata', 'jsonb', (col) => col.notNull())
    .addColumn('version', 'integer', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
  await db.schema
    .createIndex('langgraph_assistants_org_idx')
    .on('langgraph_assistants')
    .columns(['org_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createTable('langgraph_assistant_versions')
    .addColumn('assistant_id', 'text', (col) => col.notNull().references('langgraph_assistants.id').onDelete('cascade'))
    .addColumn('version', 'integer', (col) => col.notNull())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('description', 'text')
    .addColumn('config', 'jsonb', (col) => col.notNull())
    .addColumn('context', 'jsonb', (col) => col.notNull())
    .addColumn('metadata', 'jsonb', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .addPrimaryKeyConstraint('langgraph_assistant_versions_pk', ['assistant_id', 'version'])
    .execute();

  // namespace: the labels joined by "." (LangGraph forbids "." in a label), so a prefix is a text prefix.
  await db.schema
    .createTable('langgraph_store_items')
    .addColumn('org_id', 'text', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('namespace', 'text', (col) => col.notNull())
    .addColumn('key', 'text', (col) => col.notNull())
    .addColumn('value', 'jsonb', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`clock_timestamp()`))
    .addPrimaryKeyConstraint('langgraph_store_items_pk', ['org_id', 'namespace', 'key'])
    .execute();

  await db.schema
    .alterTable('threads')
    .alterColumn('deployment_id', (col) => col.dropNotNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.deleteFrom('threads').where('deployment_id', 'is', null).execute();
  await db.schema
    .alterTable('threads')
    .alterColumn('deployment_id', (col) => col.setNotNull())
    .execute();
  await db.schema.dropTable('langgraph_store_items').execute();
  await db.schema.dropTable('langgraph_assistant_versions').execute();
  await db.schema.dropTable('langgraph_assistants').execute();
}
