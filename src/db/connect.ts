import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { kyselyPool } from './kysely-pool.js';
import { emptyClusterCopy, isNewCluster } from './pglite-cluster.js';
import type { Database } from './types.js';

export type Backend = 'postgres' | 'pglite';

export interface DatabaseHandle {
  db: Kysely<Database>;
  backend: Backend;
  /** Present on PostgreSQL: the pool, for LISTEN/NOTIFY and health checks. */
  pool?: pg.Pool;
  /** Present on the embedded database. */
  pglite?: PGlite;
  close(): Promise<void>;
}

// Return int8 (counts) as numbers and keep timestamps as Date; both backends then agree.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export function connectPostgres(url: string, poolSize = 20, preparedStatements = true): DatabaseHandle {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // An idle client that loses its server emits 'error'; without a listener it would crash the process.
  pool.on('error', () => {});
  // A client in use between two queries (checked out, in a transaction) that loses its server also emits 'error',
  // and the pool listens only to idle ones: unheard, it would crash the process. The query in flight fails on its
  // own, and the pool drops the broken client when it is released.
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: kyselyPool(pool, preparedStatements) }) });
  return { db, backend: 'postgres', pool, close: () => db.destroy() };
}

/**
 * Embedded PostgreSQL: `dataDir` on disk, or in memory when undefined. Imported only here, so an
 * instance on PostgreSQL does not load it (tens of MB).
 */
export async function connectPglite(options: { dataDir?: string; loadDataDir?: Blob }): Promise<DatabaseHandle> {
  const [{ PGlite }, { PGliteDialect }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('kysely-pglite-dialect'),
  ]);
  const dataDir = options.dataDir ? path.resolve(options.dataDir) : undefined;
  const copy = dataDir && isNewCluster(dataDir) && !options.loadDataDir ? emptyClusterCopy() : undefined;
  const saved = copy?.load();
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const pglite = await PGlite.create({ dataDir, loadDataDir: options.loadDataDir ?? saved });
  if (copy && !saved) await copy.save(pglite);
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return { db, backend: 'pglite', pglite, close: () => db.destroy() };
}

export async function connectDatabase(config: {
  databaseUrl?: string | undefined;
  dataDir: string;
  databasePreparedStatements?: boolean;
}): Promise<DatabaseHandle> {
  if (config.databaseUrl) return connectPostgres(config.databaseUrl, 20, config.databasePreparedStatements ?? true);
  return connectPglite({ dataDir: path.join(config.dataDir, 'db') });
}
