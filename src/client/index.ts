import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema.js';

export { type EventStreamOptions, type StreamEvent, streamEvents } from './events.js';
export type { components, operations, paths } from './schema.js';

export type CrewdClient = Client<paths>;
export type Schemas = components['schemas'];

export interface CrewdClientOptions {
  /** The service's base URL, e.g. `http://localhost:8080`; `''` for the same origin in a browser. */
  baseUrl: string;
  /** An API key, sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
}

/** A typed client of the crewd API: every path, body and answer checked against the served OpenAPI document. */
export function createCrewdClient({ baseUrl, apiKey, fetch: fetchImpl }: CrewdClientOptions): CrewdClient {
  const client = createClient<paths>({
    baseUrl: baseUrl.replace(/\/$/, ''),
    ...(fetchImpl ? { fetch: fetchImpl } : {}),
  });
  if (apiKey) {
    client.use({
      onRequest({ request }) {
        request.headers.set('authorization', `Bearer ${apiKey}`);
        return request;
      },
    });
  }
  return client;
}

/** The message of a crewd error body (`{error: {message, code}}`), or a fallback for anything else. */
export function errorMessage(error: unknown, fallback = 'Request failed'): string {
  if (error && typeof error === 'object' && 'error' in error) {
    const inner = (error as { error?: { message?: unknown } }).error;
    if (typeof inner?.message === 'string') return inner.message;
  }
  if (error instanceof Error) return error.message;
  return fallback;
}

/** Unwraps an openapi-fetch answer: its data, or a thrown Error carrying the API's message and status. */
export async function unwrap<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<NonNullable<T>> {
  const { data, error, response } = await call;
  if (error !== undefined || data === undefined) {
    throw new ApiError(errorMessage(error, `${response.status} ${response.statusText}`), response.status);
  }
  return data as NonNullable<T>;
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}
