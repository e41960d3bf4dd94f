import type { DatabaseHandle } from '../db/connect.js';

/** Where a PostgreSQL URL points, without its password: `host:port/database`. */
export function describeDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const database = parsed.pathname.replace(/^\//, '') || 'postgres';
    return `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}/${database}`;
  } catch {
    return 'the DATABASE_URL given';
  }
}

/**
 * Asks the database one trivial question, so that a database out of reach is one clear line at start
 * (naming host and port), before anything claims the connection worked.
 */
export async function checkDatabaseReachable(database: DatabaseHandle, databaseUrl: string | undefined): Promise<void> {
  if (!database.pool || !databaseUrl) return;
  try {
    const client = await database.pool.connect();
    client.release();
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new Error(
      `cannot reach PostgreSQL at ${describeDatabaseUrl(databaseUrl)} (${reason}): check DATABASE_URL and that the database is running, or unset DATABASE_URL to use the embedded database`,
    );
  }
}
