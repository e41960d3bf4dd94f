import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

/** Deepest nesting of arrays and objects a body may have. */
export const MAX_JSON_DEPTH = 64;

/** Why a parsed body cannot be stored, or null: too deep, or a NUL character PostgreSQL text cannot hold. */
function bodyProblem(value: unknown, limit: number): string | null {
  // Iterative, so a hostile body cannot overflow the stack.
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (typeof current === 'string') {
      if (current.includes('\u0000')) return NUL_MESSAGE;
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (depth > limit) return `Body is nested deeper than ${limit} levels`;
    for (const [key, child] of Object.entries(current)) {
      if (key.includes('\u0000')) return NUL_MESSAGE;
      stack.push([child, depth + 1]);
    }
  }
  return null;
}

const NUL_MESSAGE = 'Body contains the NUL character (\\u0000), which cannot be stored';

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
      done(new AppError(400, 'bad_request', 'Body is not valid JSON'), undefined);
      return;
    }
    const problem = bodyProblem(parsed, MAX_JSON_DEPTH);
    if (problem) {
      done(new AppError(400, 'bad_request', problem), undefined);
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
      if (seen) done(new AppError(400, 'bad_request', 'Content-Type must be application/json'), undefined);
      else done(null, undefined);
    });
    payload.on('error', (error) => done(error, undefined));
  });
}
