import type { FastifySchemaValidationError } from 'fastify';

type Issue = FastifySchemaValidationError & { params?: Record<string, unknown> };

/** Turns the first schema issue into one sentence naming the field, e.g. `deployment_id is required`. */
export function validationMessage(issues: Issue[], context: string | undefined): string {
  const issue = issues[0];
  if (!issue) return 'Invalid request';
  const field = issue.instancePath.replace(/^\//, '').replaceAll('/', '.');
  const where = field || (context === 'body' ? 'body' : context === 'querystring' ? 'query' : (context ?? 'request'));
  const received = issue.params?.input;
  const expected = issue.params?.expected;
  if (issue.keyword === 'invalid_type' && received === undefined && field) return `${where} is required`;
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
