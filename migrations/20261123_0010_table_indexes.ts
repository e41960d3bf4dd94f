import { type Kysely, sql } from 'kysely';

/**
 * `data_version`: bumped by every transaction that writes a table's rows, so a total counted once
 * is known to hold while it stays the same. Existing physical tables get the autovacuum settings
 * new ones are created with, which keep the visibility map fresh for index-only counts.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('tables')
    .addColumn('data_version', 'bigint', (col) => col.notNull().defaultTo(0))
    .execute();
  const tables = await db.selectFrom('tables').select('id').execute();
  for (const { id } of tables) {
    await sql`alter table if exists ${sql.table(`data.${id}`)} set (
      autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_vacuum_scale_factor = 0.05)`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tables').dropColumn('data_version').execute();
}
