const sqlState = (error: unknown): string | null => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : null;
};

/** SQLSTATE class 22 (data exception): a NUL byte, a number out of range, an invalid Unicode escape… */
export function isDataException(error: unknown): boolean {
  return /^22[0-9A-Z]{3}$/.test(sqlState(error) ?? '');
}

/**
 * Whether PostgreSQL refused the data itself: a data exception, or class 54 (program limit
 * exceeded, such as JSON nested too deep). Trying again would never succeed.
 */
export function refusedAsData(error: unknown): boolean {
  return isDataException(error) || (sqlState(error)?.startsWith('54') ?? false);
}

const DATABASE_DOWN = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', '57P01', '57P03', '08006', '08001', '08003']);

/** The database cannot be reached (refused, dropped, shutting down): trying later may succeed. */
export function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && DATABASE_DOWN.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|timeout exceeded when trying to connect/i.test(message);
}

/** SQLSTATE 40P01: PostgreSQL aborted this transaction to break a deadlock; it may be tried again. */
export function isDeadlock(error: unknown): boolean {
  return sqlState(error) === '40P01';
}
