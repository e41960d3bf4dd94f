import type { Command } from 'commander';
import { createAdminKey, OrganizationNotFound } from '../access/admin-key.js';
import { ConfigError, loadConfig } from '../config.js';
import { DataDirInUseError, lockDataDir } from '../data-dir-lock.js';
import { connectDatabase } from '../db/connect.js';
import { migrateToLatest } from '../db/migrate.js';
import { checkDatabaseReachable } from '../service/database-check.js';
import { CliError } from './api.js';
import type { Io } from './output.js';

/** Opens the service's database as the service would (DATABASE_URL, else the embedded one under DATA_DIR). */
async function openServiceDatabase(env: NodeJS.ProcessEnv) {
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

export function adminKeyCommand(program: Command, env: NodeJS.ProcessEnv, io: Io) {
  program
    .command('admin-key')
    .description("Create a new admin API key in the service's own database (run it where the service runs)")
    .option('--organization <name|id>', 'the organization', 'default')
    .option('--name <name>', "the key's name", `admin-${new Date().toISOString().slice(0, 10)}`)
    .action(async (options: { organization: string; name: string }) => {
      const { database, close } = await openServiceDatabase(env);
      try {
        const { orgId, key } = await createAdminKey(database.db, options.organization, options.name);
        io.err(`A new admin key "${options.name}" for organization ${orgId} (shown only now):`);
        io.out(key);
      } catch (error) {
        if (error instanceof OrganizationNotFound) throw new CliError(error.message, 2);
        throw error;
      } finally {
        await close();
      }
    });
}
