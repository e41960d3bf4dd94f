import { readFileSync } from 'node:fs';
import pg from 'pg';
import { inject } from 'vitest';
import { connectPglite, connectPostgres, type DatabaseHandle } from '../../src/db/connect.js';
import { randomToken } from '../../src/ids.js';
import { adminUrl, withDatabase } from './postgres-url.js';

export interface TestDatabase {
  handle: DatabaseHandle;
  /** On PostgreSQL, the URL of this file's own database (for child-process instances). */
  url: string | undefined;
  /** Closes the connection and drops what the database left behind. */
  destroy(): Promise<void>;
}

/** A fresh, migrated database of its own: the embedded one by default, PostgreSQL with TEST_DATABASE_URL. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const target = inject('testDatabase');
  if (target.kind === 'pglite') {
    const dump = new Blob([readFileSync(target.dumpPath)]);
    const handle = await connectPglite({ loadDataDir: dump });
    return { handle, url: undefined, destroy: () => handle.close() };
  }
  const name = `crewd_t_${randomToken(12)}`;
  const admin = new pg.Client({ connectionString: adminUrl(target.url) });
  await admin.connect();
  try {
    await admin.query(`create database ${name} template ${target.template}`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(target.url, name);
  const handle = connectPostgres(url, 10);
  return {
    handle,
    url,
    async destroy() {
      await handle.close();
      const client = new pg.Client({ connectionString: adminUrl(target.url) });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

export const usingPostgres = () => inject('testDatabase').kind === 'postgres';
