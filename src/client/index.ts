import createClient, { type Client } from 'openapi-fetch';
import { apiError } from './errors.js';
import type { components, paths } from './schema.js';

export { uploadBundle } from './bundles.js';
export { ApiError, apiError, errorMessage } from './errors.js';
export { type EventStreamOptions, type StreamEvent, streamEvents } from './events.js';
export type { components, operations, paths } from './schema.js';
export { parseSseText, readSse, type SseMessage, SseParser } from './sse.js';

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

/** Unwraps an openapi-fetch answer: its data, or a thrown ApiError carrying the API's message, status and code. */
export async function unwrap<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<NonNullable<T>> {
  const { data, error, response } = await call;
  if (error !== undefined || data === undefined) throw apiError(error, response);
  return data as NonNullable<T>;
}
