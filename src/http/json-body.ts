import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../json-depth.js';

/** Whether a parsed body holds a NUL character, which PostgreSQL text cannot hold. Iterative, as bodies may be deep. */
function holdsNul(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current === 'string') {
      if (current.includes('\u0000')) return true;
    } else if (current !== null && typeof current === 'object') {
      for (const [key, child] of Object.entries(current)) {
        if (key.includes('\u0000')) return true;
        stack.push(child);
      }
    }
  }
  return false;
}

/** Why a parsed body cannot be stored, or null. */
function bodyProblem(text: string, value: unknown): string | null {
  if (nestedDeeperThan(value, MAX_JSON_DEPTH)) return `Body is nested deeper than ${MAX_JSON_DEPTH} levels`;
  // JSON text cannot hold a raw NUL in a string, so only the escape can put one there.
  if (text.includes('\\u0000') && holdsNul(value)) return NUL_MESSAGE;
  return null;
}

const NUL_MESSAGE = 'Body contains the NUL character (\\u0000), which cannot be stored';

/** The refusal of a body of another content type (src/mcp/routes.ts answers it 415). */
export const NOT_JSON_TYPE = 'Content-Type must be application/json';

/** A body this parser refuses (400 in /v1; the LangGraph API answers it 422, as CONTRACTS §14 says of a bad body). */
export class UnreadableBody extends AppError {
  constructor(message: string) {
    super(400, 'bad_request', message);
  }
}

/**
 * JSON bodies only. JSON.parse makes `__proto__` an own property rather than a prototype,
 * so user data such as a column named `__proto__` is kept as data instead of refused.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      done(new UnreadableBody('Body is not valid JSON'), undefined);
      return;
    }
    const problem = bodyProblem(text, parsed);
    if (problem) {
      done(new UnreadableBody(problem), undefined);
      return;
    }
    done(null, parsed);
  });
  app.addContentTypeParser('*', (_request, payload, done) => {
    // Bodyless requests (no Content-Length, no chunks) are fine; any other body is refused.
    let seen = false;
    payload.on('data', () => {
      seen = true;
    });
    payload.on('end', () => {
      if (seen) done(new UnreadableBody(NOT_JSON_TYPE), undefined);
      else done(null, undefined);
    });
    payload.on('error', (error) => done(error, undefined));
  });
}
