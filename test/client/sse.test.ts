import { describe, expect, it } from 'vitest';
import { parseSseText, readSse, type SseMessage, SseParser } from '../../src/client/sse.js';

/** The messages of `text` fed to one parser in the given pieces. */
function parsePieces(pieces: string[]): SseMessage[] {
  const messages: SseMessage[] = [];
  const parser = new SseParser((message) => messages.push(message));
  for (const piece of pieces) parser.push(piece);
  return messages;
}

/** Every way of cutting `text` in two, and the text one character at a time. */
function everyCut(text: string): string[][] {
  const cuts = Array.from({ length: text.length + 1 }, (_, at) => [text.slice(0, at), text.slice(at)]);
  return [...cuts, [...text]];
}

const STREAM =
  ': keepalive\r\n\r\n' +
  'id: 1\r\nevent: log\r\ndata: {"a":1}\r\n\r\n' +
  'data: first line\ndata:second line\ndata\n\n' +
  'id: 2\rretry: 1500\rdata:  two spaces\r\r' +
  'retry: soon\nid: with\0nul\nfield without meaning: x\ndata: last\n\n' +
  'data: never ended';

const EXPECTED: SseMessage[] = [
  { comments: ['keepalive'] },
  { id: '1', event: 'log', data: '{"a":1}' },
  { data: 'first line\nsecond line\n' },
  { id: '2', retry: 1500, data: ' two spaces' },
  { data: 'last' },
];

describe('the event-stream parser', () => {
  it('reads comments, ids, events, retry and multi-line data, with LF, CR or CRLF line ends', () => {
    expect(parseSseText(STREAM)).toEqual(EXPECTED);
  });

  it('gives the same messages however the text is cut, a CRLF cut between its CR and LF included', () => {
    for (const pieces of everyCut(STREAM)) expect(parsePieces(pieces)).toEqual(EXPECTED);
  });

  it('reads a body of bytes cut inside a character, and cancels it when the reader stops early', async () => {
    const bytes = new TextEncoder().encode('data: é€😀\n\nid: 7\ndata: {}\n\ndata: unread\n\n');
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(Uint8Array.of(byte));
      },
      cancel() {
        cancelled = true;
      },
    });
    const seen: SseMessage[] = [];
    for await (const message of readSse(body)) {
      seen.push(message);
      if (message.id === '7') break;
    }
    expect(seen).toEqual([{ data: 'é€😀' }, { id: '7', data: '{}' }]);
    expect(cancelled).toBe(true);
  });
});
