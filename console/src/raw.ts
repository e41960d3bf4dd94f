import { ApiError, errorMessage } from '../../src/client/index.js';

/**
 * A call to a route the generated client does not know yet (one a newer server may serve: bundles, variables,
 * crons). Same bearer key and error handling as the typed client.
 */
export async function rawCall<T>(key: string, method: string, path: string, body?: unknown, type?: string): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  let payload: BodyInit | undefined;
  if (body instanceof Blob) {
    headers['content-type'] = type ?? 'application/gzip';
    payload = body;
  } else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const response = await fetch(path, { method, headers, body: payload });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : undefined;
  if (!response.ok)
    throw new ApiError(errorMessage(parsed, `${response.status} ${response.statusText}`), response.status);
  return parsed as T;
}
