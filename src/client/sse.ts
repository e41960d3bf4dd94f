/**
 * The one reader of `text/event-stream` bodies (the WHATWG grammar), shared by the client, the CLI (through the
 * client), the tests and the benches. It gives fields their wire meaning only; what the data says is the caller's.
 */

/** One message of an event stream: the lines up to a blank line. */
export interface SseMessage {
  /** The message's `id:` field, when it had one (an id holding NUL is ignored, as the standard says). */
  id?: string;
  /** The message's `event:` field, when it had one. */
  event?: string;
  /** Its `data:` lines joined with `\n`; absent when it had none. */
  data?: string;
  /** Its `retry:` field in milliseconds, when that was a whole number. */
  retry?: number;
  /** Its comment lines (`: keepalive` gives `keepalive`). */
  comments?: string[];
}

const LF = 10;
const CR = 13;

/**
 * An incremental parser: `push` text as it arrives, cut anywhere (even between a CR and its LF), and `onMessage`
 * sees each message when its blank line arrives. Lines end with CRLF, LF or CR. A message of comments only (a
 * keepalive) is reported too, so readers that wait for keepalives see them; readers of events skip messages
 * without `data`. A message the stream ends before its blank line is dropped, as the standard says.
 */
export class SseParser {
  private partial = '';
  private afterCr = false;
  private message: SseMessage = {};
  private data: string[] = [];
  private empty = true;

  constructor(private readonly onMessage: (message: SseMessage) => void) {}

  push(text: string): void {
    if (text === '') return;
    let start = 0;
    if (this.afterCr) {
      this.afterCr = false;
      if (text.charCodeAt(0) === LF) start = 1;
    }
    // Where the next CR and LF are, found once each and searched again only when passed: linear in the text.
    let nextCr = -2;
    let nextLf = -2;
    while (start < text.length) {
      if (nextCr !== -1 && nextCr < start) nextCr = text.indexOf('\r', start);
      if (nextLf !== -1 && nextLf < start) nextLf = text.indexOf('\n', start);
      const end = nextCr === -1 ? nextLf : nextLf === -1 ? nextCr : Math.min(nextCr, nextLf);
      if (end === -1) break;
      const line = this.partial === '' ? text.slice(start, end) : this.partial + text.slice(start, end);
      this.partial = '';
      this.line(line);
      start = end + 1;
      if (text.charCodeAt(end) === CR) {
        if (end + 1 === text.length) this.afterCr = true;
        else if (text.charCodeAt(end + 1) === LF) start = end + 2;
      }
    }
    if (start < text.length) this.partial += text.slice(start);
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatch();
      return;
    }
    this.empty = false;
    const colon = line.indexOf(':');
    if (colon === 0) {
      this.message.comments = [...(this.message.comments ?? []), withoutSpace(line.slice(1))];
      return;
    }
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : withoutSpace(line.slice(colon + 1));
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.message.event = value;
    else if (field === 'id' && !value.includes('\0')) this.message.id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.message.retry = Number(value);
  }

  private dispatch(): void {
    if (this.empty) return;
    const message = this.message;
    if (this.data.length > 0) message.data = this.data.join('\n');
    this.message = {};
    this.data = [];
    this.empty = true;
    this.onMessage(message);
  }
}

const withoutSpace = (value: string) => (value.charCodeAt(0) === 32 ? value.slice(1) : value);

/** The messages of a whole event-stream text, e.g. a finished build's log read with `response.text()`. */
export function parseSseText(text: string): SseMessage[] {
  const messages: SseMessage[] = [];
  const parser = new SseParser((message) => messages.push(message));
  parser.push(text);
  return messages;
}

/**
 * The messages of an event-stream body as they arrive. Ending the loop early (break, throw) cancels the body;
 * so does reaching its end.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const ready: SseMessage[] = [];
  const parser = new SseParser((message) => ready.push(message));
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      parser.push(decoder.decode(value, { stream: true }));
      // Handed over one at a time, so a reader that stops at one message leaves the rest unread.
      while (ready.length > 0) yield ready.shift() as SseMessage;
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
