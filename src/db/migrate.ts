import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely';
import { migrations } from '../../migrations/index.js';

const provider: MigrationProvider = {
  getMigrations: async (): Promise<Record<string, Migration>> => migrations,
};

/** Applies every pending migration; throws with the failing migration's name. */
// biome-ignore lint/suspicious/noExplicitAny: the migrator works on any schema
export async function migrateToLatest(db: Kysely<any>): Promise<void> {
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error) {
    const where = failed ? ` in migration ${failed.migrationName}` : '';
    throw new Error(`Migration failed${where}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
