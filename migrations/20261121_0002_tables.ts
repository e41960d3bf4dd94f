import { type Kysely, sql } from 'kysely';

/** The table catalog, and the schema that holds one physical table per user table. */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create schema if not exists data`.execute(db);

  await db.schema
    .createTable('tables')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('org_id', 'text', (col) => col.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('description', 'text')
    .addColumn('columns', 'jsonb', (col) => col.notNull())
    .addColumn('row_count', 'bigint', (col) => col.notNull().defaultTo(0))
    // Bumped by every change of the definition; lets readers trust a cached definition.
    .addColumn('revision', 'integer', (col) => col.notNull().defaultTo(1))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('tables_org_name_unique', ['org_id', 'name'])
    .execute();
  await db.schema.createIndex('tables_org_created_idx').on('tables').columns(['org_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('tables').execute();
  await sql`drop schema if exists data cascade`.execute(db);
}
