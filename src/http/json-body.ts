import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

/** Deepest nesting of arrays and objects a body may have. */
export const MAX_JSON_DEPTH = 64;

function depthExceeds(value: unknown, limit: number): boolean {
  // Iterative, so a hostile body cannot overflow the stack.
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (current === null || typeof current !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
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
      done(new AppError(400, 'bad_request', 'Body is not valid JSON'), undefined);
      return;
    }
    if (depthExceeds(parsed, MAX_JSON_DEPTH)) {
      done(new AppError(400, 'bad_request', `Body is nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
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
