/** The same server URL pointed at another database. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** Where to run CREATE/DROP DATABASE: the URL's own database, or `postgres`. */
export function adminUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.pathname === '/' || parsed.pathname === '') parsed.pathname = '/postgres';
  return parsed.toString();
}
