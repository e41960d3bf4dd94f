import type { FastifySchemaValidationError } from 'fastify';

type Issue = FastifySchemaValidationError & { params?: Record<string, unknown> };

/** Turns the first schema issue into one sentence naming the field, e.g. `deployment_id is required`. */
export function validationMessage(issues: Issue[], context: string | undefined, source: unknown): string {
  const issue = issues[0];
  if (!issue) return 'Invalid request';
  const field = issue.instancePath.replace(/^\//, '').replaceAll('/', '.');
  const where = field || (context === 'body' ? 'body' : context === 'querystring' ? 'query' : (context ?? 'request'));
  const expected = issue.params?.expected;
  const missing = valueAt(source, issue.instancePath) === undefined;
  if (issue.keyword === 'invalid_type' && missing && field) return `${where} is required`;
  if (issue.keyword === 'invalid_type' && typeof expected === 'string') {
    return `${where} must be ${article(expected)}`;
  }
  if (issue.keyword === 'unrecognized_keys') {
    const keys = (issue.params?.keys as string[] | undefined) ?? [];
    const prefix = field ? `${field}: ` : '';
    return `${prefix}unknown field${keys.length > 1 ? 's' : ''} ${keys.map((k) => `"${k}"`).join(', ')}`;
  }
  return `${where}: ${issue.message}`;
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** The value a JSON pointer such as `/columns/0/name` points at, or undefined. */
function valueAt(source: unknown, pointer: string): unknown {
  let current = source;
  for (const segment of pointer.split('/').slice(1)) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, segment)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}
