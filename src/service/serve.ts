import { type Config, ConfigError, loadConfig, SETTING_NAMES } from '../config.js';
import { DataDirInUseError, lockDataDir } from '../data-dir-lock.js';
import { prettyDestination } from '../log-pretty.js';
import { createLogger } from '../logger.js';
import { startBanner } from './banner.js';
import { checkDatabaseReachable } from './database-check.js';
import { findSettingTypos } from './setting-typos.js';

/** A start that cannot go on: its one line goes to standard error and the process exits with 1. */
class StartError extends Error {}

function configFrom(env: NodeJS.ProcessEnv): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) throw new StartError(error.message);
    throw error;
  }
}

function lockData(config: Config): void {
  try {
    const lock = lockDataDir(config.dataDir);
    process.once('exit', () => lock.release());
  } catch (error) {
    if (error instanceof DataDirInUseError) throw new StartError(error.message);
    throw error;
  }
}

function loggerFor(config: Config) {
  const pretty = config.logFormat ? config.logFormat === 'pretty' : process.stdout.isTTY === true;
  return createLogger(config.logLevel, pretty ? prettyDestination() : undefined);
}

/** The first start's generated key, printed once outside the log stream, so the secret never lands in log storage. */
function printGeneratedKey(key: string): void {
  process.stdout.write(
    `\n  crewd generated an admin API key for organization "default" (shown only now):\n\n    ${key}\n\n` +
      '  Lost it later? Stop crewd and run `npx crewd admin-key` for a new one (docs/operations.md).\n\n',
  );
}

/**
 * Loaded once the settings and the data folder are known to be good: a start refused for either costs about 0.6 s
 * of CPU instead of 2.3 s (measured through tsx).
 */
async function startModules() {
  const [connect, migrate, bootstrap, bootstrapKey, app] = await Promise.all([
    import('../db/connect.js'),
    import('../db/migrate.js'),
    import('../access/bootstrap.js'),
    import('../auth/bootstrap-key.js'),
    import('../app.js'),
  ]);
  return { ...connect, ...migrate, ...bootstrap, ...bootstrapKey, ...app };
}

/** Starts the service as `npm start` and `crewd serve` do: settings from `env`, listening until SIGTERM or SIGINT. */
export async function serve(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = configFrom(env);
  lockData(config);
  const logger = loggerFor(config);
  for (const typo of findSettingTypos(env, SETTING_NAMES)) {
    logger.warn(`${typo.name} is not a setting of crewd and is ignored; did you mean ${typo.closest}?`);
  }

  const { connectDatabase, migrateToLatest, bootstrapDefaultOrganization, isBootstrapKeyIgnored, buildApp } =
    await startModules();
  const database = await connectDatabase(config);
  await checkDatabaseReachable(database, config.databaseUrl);
  await migrateToLatest(database.db);
  logger.info({ backend: database.backend }, 'database connected');

  const { generatedKey } = await bootstrapDefaultOrganization(database.db, config.bootstrapApiKey);
  if (generatedKey) printGeneratedKey(generatedKey);
  if (await isBootstrapKeyIgnored(database.db, config.bootstrapApiKey)) {
    logger.warn(
      'BOOTSTRAP_API_KEY is set but ignored: organization "default" already has an admin key, and it is not this one. ' +
        'Use an existing admin key, or stop crewd and run `npx crewd admin-key` for a new one; then unset BOOTSTRAP_API_KEY',
    );
  }

  const app = await buildApp({ config, database, logger });
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await app.close();
    await database.close();
    throw listenError(error, config.port, generatedKey !== null);
  }
  const address = app.server.address();
  if (address && typeof address === 'object')
    process.stdout.write(startBanner({ host: config.host, port: address.port }));
  stopOnSignals(logger, async () => {
    await app.close();
    await database.close();
  });
}

/** A port crewd cannot take, said with what to do; `keyShown`: this start printed the admin key, which is kept. */
function listenError(error: unknown, port: number, keyShown: boolean): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const kept = keyShown ? ' The admin key printed above is kept: use it once crewd runs.' : '';
  if (code === 'EADDRINUSE') {
    return new StartError(
      `crewd cannot listen on port ${port}: another program uses it (another crewd?). Stop that program, or start ` +
        `crewd on a free port with PORT (PORT=8081 npm start).${kept}`,
    );
  }
  if (code === 'EACCES') {
    return new StartError(
      `crewd may not listen on port ${port} (EACCES): ports below 1024 need privileges. Choose another with PORT ` +
        `(PORT=8080 npm start).${kept}`,
    );
  }
  return error;
}

function stopOnSignals(logger: ReturnType<typeof createLogger>, close: () => Promise<void>): void {
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    try {
      await close();
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** `serve()` for an entry point: a start that fails is one line on standard error and exit code 1. */
export function serveOrExit(env: NodeJS.ProcessEnv = process.env): void {
  serve(env).catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(error instanceof StartError ? `${message}\n` : `crewd failed to start: ${message}\n`);
    process.exit(1);
  });
}
