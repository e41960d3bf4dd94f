import type { Kysely } from 'kysely';

/**
 * `mcp`: whether the deployment is a tool at /mcp (docs/mcp.md); `description`: what the tool says it does.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('deployments')
    .addColumn('mcp', 'boolean', (col) => col.notNull().defaultTo(true))
    .addColumn('description', 'text')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deployments').dropColumn('mcp').dropColumn('description').execute();
}
