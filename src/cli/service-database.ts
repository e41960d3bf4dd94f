import { ConfigError, loadConfig } from '../config.js';
import { DataDirInUseError, lockDataDir } from '../data-dir-lock.js';
import { connectDatabase } from '../db/connect.js';
import { migrateToLatest } from '../db/migrate.js';
import { checkDatabaseReachable } from '../service/database-check.js';
import { CliError } from './api.js';

/** Opens the service's database as the service would (DATABASE_URL, else the embedded one under DATA_DIR). */
export async function openServiceDatabase(env: NodeJS.ProcessEnv) {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message, 2);
    throw error;
  }
  let release = () => {};
  if (!config.databaseUrl) {
    try {
      release = lockDataDir(config.dataDir).release;
    } catch (error) {
      if (!(error instanceof DataDirInUseError)) throw error;
      throw new CliError(
        `${error.message}. The embedded database serves one process: stop crewd (Ctrl-C), run this again, then start crewd`,
        2,
      );
    }
  }
  const database = await connectDatabase(config);
  try {
    await checkDatabaseReachable(database, config.databaseUrl);
    await migrateToLatest(database.db);
  } catch (error) {
    await database.close().catch(() => {});
    release();
    throw new CliError((error as Error).message, 2);
  }
  return {
    database,
    close: async () => {
      await database.close();
      release();
    },
  };
}
