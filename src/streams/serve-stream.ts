import type { FastifyReply } from 'fastify';
import { badRequest } from '../errors.js';
import { createSseSink, type SseFraming } from './sse-sink.js';
import type { RunStream } from './stream.js';

/** The resume point of an event stream: the `Last-Event-ID` header, else the `last_event_id` query. */
export function resumePoint(header: string | string[] | undefined, query: string | undefined): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value !== undefined && value !== '') {
    if (!/^\d+$/.test(value.trim())) throw badRequest('Last-Event-ID must be a non-negative integer');
    return Number(value.trim());
  }
  return query === undefined ? null : Number(query);
}

/**
 * Serves an opened stream over SSE (CONTRACTS §7), or in another framing (the LangGraph API's): 404
 * before any byte when its subject is unknown.
 */
export async function serveStream(reply: FastifyReply, stream: RunStream, framing?: SseFraming): Promise<void> {
  await stream.prepare();
  reply.sse.sendHeaders();
  const sink = createSseSink(reply, undefined, framing ?? null);
  reply.sse.onClose(() => stream.close());
  await stream.start(sink);
  await stream.done;
  await sink.ended;
}
