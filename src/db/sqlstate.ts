/**
 * Whether PostgreSQL refused the data itself: SQLSTATE classes 22 (data exception) and 54
 * (program limit exceeded, such as JSON nested too deep). Trying again would never succeed.
 */
export function refusedAsData(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('54'));
}
