import type { Kysely } from 'kysely';

/**
 * `mcp`: whether the deployment is a tool at /mcp (docs/mcp.md); `description`: what the tool says it does;
 * a version's `tool_schemas`: what its build's import check found its input and output to be.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('deployments')
    .addColumn('mcp', 'boolean', (col) => col.notNull().defaultTo(true))
    .addColumn('description', 'text')
    .execute();
  await db.schema.alterTable('deployment_versions').addColumn('tool_schemas', 'jsonb').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deployment_versions').dropColumn('tool_schemas').execute();
  await db.schema.alterTable('deployments').dropColumn('mcp').dropColumn('description').execute();
}
