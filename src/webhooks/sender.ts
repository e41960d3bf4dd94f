import { Agent, request } from 'undici';
import { ForbiddenAddressError, guardedConnector } from './address-guard.js';

/** The most of a receiver's answer body read before the connection is let go. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface AttemptResult {
  /** The receiver's HTTP status, or null when no answer came. */
  responseStatus: number | null;
  /** Null on a 2xx; else why the attempt failed. */
  errorMessage: string | null;
  durationMs: number;
}

export interface Sender {
  send(input: {
    url: string;
    headers: Record<string, string>;
    body: string;
    signal: AbortSignal;
  }): Promise<AttemptResult>;
  close(): Promise<void>;
}

function describeError(error: unknown, timeoutSeconds: number): string {
  if (error instanceof ForbiddenAddressError) return error.message;
  const { name, code, message } = error as { name?: string; code?: string; message?: string };
  if (
    name === 'TimeoutError' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return `Timed out after ${timeoutSeconds} s without an answer`;
  }
  switch (code) {
    case 'ECONNREFUSED':
      return 'Connection refused';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'Connection closed before an answer';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'Host name could not be resolved';
    default:
      return code ? `${code}: ${message ?? 'request failed'}` : (message ?? 'Request failed');
  }
}

/** POSTs through an agent whose connector refuses internal addresses; redirects are never followed. */
export function createSender(options: { timeoutSeconds: number; allowPrivateUrls: boolean }): Sender {
  const timeoutMs = options.timeoutSeconds * 1000;
  const agent = new Agent({
    connect: guardedConnector({ allowPrivate: options.allowPrivateUrls, timeoutMs }),
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 4_000,
  });

  return {
    async send({ url, headers, body, signal }) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      try {
        const response = await request(url, {
          method: 'POST',
          headers,
          body,
          dispatcher: agent,
          signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
        });
        // The status is the answer; the body is drained in the background, bounded, and ignored.
        response.body.dump({ limit: MAX_RESPONSE_BYTES }).catch(() => {});
        const status = response.statusCode;
        if (status >= 200 && status < 300) return { responseStatus: status, errorMessage: null, durationMs: elapsed() };
        const note = status >= 300 && status < 400 ? '; redirects are not followed' : '';
        return { responseStatus: status, errorMessage: `Receiver answered ${status}${note}`, durationMs: elapsed() };
      } catch (error) {
        if (signal.aborted) throw error;
        return {
          responseStatus: null,
          errorMessage: describeError(error, options.timeoutSeconds),
          durationMs: elapsed(),
        };
      }
    },
    close: () => agent.destroy(),
  };
}
