/**
 * The CLI's whole view of the API: a small fetch wrapper and an SSE reader that resumes with
 * Last-Event-ID. Kept in this one file so it can be swapped for the typed client (src/client).
 */

/** A usage or connection problem (exit code 2), with what to fix. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** An error answer of the API: `{error: {message, code}}`. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message, 2);
    this.name = 'ApiError';
  }
}

export interface StreamEvent {
  id: number | null;
  // biome-ignore lint/suspicious/noExplicitAny: events are JSON of many shapes; commands read what they need.
  data: any;
}

// biome-ignore lint/suspicious/noExplicitAny: answers of the API, read by each command as it needs.
type Answer = any;

export interface Api {
  request(
    method: string,
    path: string,
    options?: { json?: unknown; body?: Buffer; contentType?: string },
  ): Promise<Answer>;
  /** Reads an event stream until its `complete`, reconnecting with Last-Event-ID; answers the `complete`. */
  follow(path: string, onEvent: (event: StreamEvent) => void, options?: { lastEventId?: number }): Promise<StreamEvent>;
}

const RECONNECTS = 10;

export function createApi(baseUrl: string, key: string): Api {
  const base = baseUrl.replace(/\/+$/, '');

  async function send(path: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(`${base}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) },
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(
        `Cannot reach crewd at ${base} (${cause?.code ?? cause?.message ?? (error as Error).message}): check the URL (crewd login --url, or CREWD_URL) and that the service runs`,
      );
    }
  }

  async function failure(response: Response): Promise<ApiError> {
    const text = await response.text();
    try {
      const { error } = JSON.parse(text) as { error: { code: string; message: string } };
      const hint = response.status === 401 ? ': check the API key (crewd login --key, or CREWD_API_KEY)' : '';
      return new ApiError(response.status, error.code, `${error.message}${hint}`);
    } catch {
      return new ApiError(response.status, 'unknown', `crewd answered ${response.status}: ${text.slice(0, 200)}`);
    }
  }

  async function openStream(path: string, lastEventId: number | null): Promise<Response> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (lastEventId !== null) headers['last-event-id'] = String(lastEventId);
    const response = await send(path, { headers });
    if (!response.ok) throw await failure(response);
    return response;
  }

  return {
    async request(method, path, options = {}) {
      const headers: Record<string, string> = {};
      let body: string | Uint8Array | undefined;
      if (options.json !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(options.json);
      } else if (options.body) {
        headers['content-type'] = options.contentType ?? 'application/octet-stream';
        body = new Uint8Array(options.body);
      }
      const response = await send(path, { method, headers, ...(body === undefined ? {} : { body }) });
      if (!response.ok) throw await failure(response);
      return response.json();
    },

    async follow(path, onEvent, options = {}) {
      let lastId: number | null = options.lastEventId ?? null;
      for (let attempt = 0; ; attempt++) {
        let response: Response;
        try {
          response = await openStream(path, lastId);
        } catch (error) {
          if (error instanceof ApiError || attempt >= RECONNECTS) throw error;
          await new Promise((resolve) => setTimeout(resolve, 1000));
          continue;
        }
        const ended = await readFrames(response, (event) => {
          if (event.id !== null) lastId = event.id;
          // `timeout` and `error` are about the stream, not its subject: the stream is resumed instead.
          if (!['complete', 'timeout', 'error'].includes(event.data?.type)) onEvent(event);
        }).catch(() => null);
        if (ended) return ended;
        // The stream closed early (timeout, a fault, a restart): resume after the last event.
        if (lastId === null) lastId = 0;
        if (attempt >= RECONNECTS) throw new CliError(`The event stream of ${path} kept closing; try again`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    },
  };
}

/** Reads SSE frames until `complete` (answered) or the end of the response (null). */
async function readFrames(response: Response, onEvent: (event: StreamEvent) => void): Promise<StreamEvent | null> {
  if (!response.body) return null;
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    for (let split = buffer.indexOf('\n\n'); split !== -1; split = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, split);
      buffer = buffer.slice(split + 2);
      let id: number | null = null;
      let data: string | null = null;
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) id = Number(line.slice(4));
        else if (line.startsWith('data: ')) data = line.slice(6);
      }
      if (data === null) continue;
      const event: StreamEvent = { id, data: JSON.parse(data) };
      onEvent(event);
      if (event.data?.type === 'complete') return event;
    }
  }
  return null;
}
