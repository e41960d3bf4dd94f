import type { FastifyReply } from 'fastify';

/**
 * Sends an answer already serialised to JSON (one kept in a cache, say). Fastify sends a string
 * with a JSON content type as it is, without the route's serializer; the text must already have
 * the shape the route's response schema declares.
 */
export function sendJsonText(reply: FastifyReply, json: string): FastifyReply {
  // The cast only silences the route's typed reply: the payload is that type, serialised.
  return reply.type('application/json; charset=utf-8').send(json as never);
}
