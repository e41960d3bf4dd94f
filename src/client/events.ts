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
  /** Reconnections after a dropped connection before giving up (default 5). */
  retries?: number;
  fetch?: typeof fetch;
}

const TERMINAL = new Set(['complete', 'timeout', 'error']);

/**
 * Reads an event stream to its end (`complete`, `timeout` or `error`). When the connection drops first, it
 * reconnects with `Last-Event-ID` set to the last id seen, so no event is lost or repeated.
 */
export async function* streamEvents(options: EventStreamOptions): AsyncGenerator<StreamEvent> {
  const fetchImpl = options.fetch ?? fetch;
  let lastId = options.lastEventId;
  let retriesLeft = options.retries ?? 5;
  for (;;) {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
    if (lastId !== undefined) headers['last-event-id'] = String(lastId);
    let ended = false;
    try {
      const response = await fetchImpl(options.url, { headers, signal: options.signal });
      if (!response.ok || !response.body) throw new StreamRefused(await refusal(response));
      for await (const event of parseEvents(response.body)) {
        if (event.seq !== null) lastId = event.seq;
        yield event;
        if (TERMINAL.has(event.data.type)) ended = true;
      }
      if (ended) return;
    } catch (error) {
      if (error instanceof StreamRefused || options.signal?.aborted || retriesLeft <= 0) throw error;
    }
    retriesLeft -= 1;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

class StreamRefused extends Error {}

async function refusal(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: { message?: string } };
    return body.error?.message ?? `${response.status}`;
  } catch {
    return `Event stream answered ${response.status}`;
  }
}

/** Splits a `text/event-stream` body into events; comments (`: keepalive`) are skipped. */
async function* parseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      let boundary = buffer.indexOf('\n\n');
      while (boundary >= 0) {
        const event = parseBlock(buffer.slice(0, boundary));
        buffer = buffer.slice(boundary + 2);
        if (event) yield event;
        boundary = buffer.indexOf('\n\n');
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}

function parseBlock(block: string): StreamEvent | null {
  let id: string | null = null;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('id:')) id = line.slice(3).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length === 0) return null;
  return { seq: id === null || id === '' ? null : Number(id), data: JSON.parse(data.join('\n')) };
}
