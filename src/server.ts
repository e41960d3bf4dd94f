import { bootstrapDefaultOrganization } from './access/bootstrap.js';
import { buildApp } from './app.js';
import { isBootstrapKeyIgnored } from './auth/bootstrap-key.js';
import { ConfigError, loadConfig } from './config.js';
import { DataDirInUseError, lockDataDir } from './data-dir-lock.js';
import { connectDatabase } from './db/connect.js';
import { migrateToLatest } from './db/migrate.js';
import { createLogger } from './logger.js';

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }

  try {
    const lock = lockDataDir(config.dataDir);
    process.once('exit', () => lock.release());
  } catch (error) {
    if (error instanceof DataDirInUseError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }

  const logger = createLogger(config.logLevel);
  const database = await connectDatabase(config);
  logger.info({ backend: database.backend }, 'database connected');
  await migrateToLatest(database.db);

  const { generatedKey } = await bootstrapDefaultOrganization(database.db, config.bootstrapApiKey);
  if (generatedKey) {
    // Printed once, outside the log stream, so the secret never lands in log storage.
    process.stdout.write(
      `\n  crewd generated an admin API key for organization "default" (shown only now):\n\n    ${generatedKey}\n\n`,
    );
  }
  if (await isBootstrapKeyIgnored(database.db, config.bootstrapApiKey)) {
    logger.warn(
      'BOOTSTRAP_API_KEY is set but ignored: organization "default" already has an admin key, and it is not this one. ' +
        'Use an existing admin key (or create one with POST /v1/api-keys), and unset BOOTSTRAP_API_KEY',
    );
  }

  const app = await buildApp({ config, database, logger });
  await app.listen({ port: config.port, host: config.host });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    try {
      await app.close();
      await database.close();
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`crewd failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
