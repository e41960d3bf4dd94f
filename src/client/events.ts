import { ApiError, apiError } from './errors.js';
import { readSse } from './sse.js';

/** One Server-Sent Event of a run or build stream: `seq` is its `id:` (null for events without one). */
export interface StreamEvent {
  seq: number | null;
  data: { type: string; [key: string]: unknown };
}

export interface EventStreamOptions {
  /** Absolute URL of the stream, e.g. `${baseUrl}/v1/runs/${id}/events`. */
  url: string;
  apiKey?: string;
  /** Resume after this event id; `0` replays everything. */
  lastEventId?: number;
  signal?: AbortSignal;
  /** Reconnections in a row, after dropped connections or 5xx answers, before giving up (default 5). */
  retries?: number;
  /**
   * Reopen the stream after a `timeout` (the stream's lifetime ran out) or an `error` event instead of ending
   * there, so that the iterator ends only with `complete`. Both events are still yielded.
   */
  untilComplete?: boolean;
  fetch?: typeof fetch;
}

const RETRY_DELAY_MS = 500;

/**
 * Reads an event stream to its end (`complete`; or `timeout` or `error` unless `untilComplete`). When the
 * connection drops first, it reconnects with `Last-Event-ID` set to the last id seen, so no event is lost or
 * repeated. A 4xx answer throws the API's ApiError at once.
 */
export async function* streamEvents(options: EventStreamOptions): AsyncGenerator<StreamEvent> {
  const ends = new Set(options.untilComplete ? ['complete'] : ['complete', 'timeout', 'error']);
  let lastId = options.lastEventId;
  let failures = 0;
  for (;;) {
    let progressed = false;
    let failure: unknown = null;
    try {
      const response = await openStream(options, lastId);
      for await (const event of parseEvents(response.body as ReadableStream<Uint8Array>)) {
        if (event.seq !== null) lastId = event.seq;
        // A repeated `error` must not reset the count, or a stream that keeps failing would be reopened forever.
        if (event.data.type !== 'error') progressed = true;
        yield event;
        if (ends.has(event.data.type)) return;
      }
    } catch (error) {
      if ((error instanceof ApiError && error.status < 500) || options.signal?.aborted) throw error;
      failure = error;
    }
    failures = progressed ? 0 : failures + 1;
    if (failures > (options.retries ?? 5)) {
      throw failure ?? new Error(`The event stream ${options.url} kept closing before its end`);
    }
    // Everything from the start was asked for and nothing counted yet: ask for it all again.
    lastId ??= 0;
    await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
  }
}

async function openStream(options: EventStreamOptions, lastId: number | undefined): Promise<Response> {
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  if (lastId !== undefined) headers['last-event-id'] = String(lastId);
  const response = await (options.fetch ?? fetch)(options.url, { headers, signal: options.signal });
  if (!response.ok) throw apiError(await response.json().catch(() => null), response);
  if (!response.body) throw new Error(`Event stream of ${options.url} answered without a body`);
  return response;
}

/** The run's or build's events in a `text/event-stream` body; messages without data (keepalives) are skipped. */
async function* parseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  for await (const message of readSse(body)) {
    if (message.data === undefined) continue;
    const seq = message.id === undefined || message.id === '' ? null : Number(message.id);
    yield { seq, data: JSON.parse(message.data) };
  }
}
