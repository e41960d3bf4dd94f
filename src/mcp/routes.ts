import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../auth/plugin.js';
import { NOT_JSON_TYPE, UnreadableBody } from '../http/json-body.js';
import { CallsInFlight } from './calls-in-flight.js';
import { createMcpServer, type McpDeps } from './server.js';

export interface McpRouteOptions extends Omit<McpDeps, 'calls'> {
  /** Origins whose browsers may call /mcp (MCP_ALLOWED_ORIGINS); `*` allows any. Requests without Origin pass. */
  allowedOrigins: readonly string[];
}

/** JSON-RPC's code for a body that is not JSON; the transport's other refusals are -32000. */
const PARSE_ERROR = -32700;

/** A JSON-RPC error without id, as the transport answers what it refuses. */
function refuse(
  reply: FastifyReply,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  code = -32000,
) {
  return reply
    .status(status)
    .headers(headers)
    .type('application/json')
    .send(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** Whether the POSTed message is an initialize request (answered with a new Mcp-Session-Id). */
function initializes(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((message) => (message as { method?: unknown } | null)?.method === 'initialize');
}

/** The request headers an MCP client in a browser sends (Streamable HTTP). */
const PREFLIGHT_HEADERS = 'authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id';

const wants = (accept: string, type: string) => accept.includes(type) || accept.includes('*/*');

/**
 * Answers with SSE when the client takes it and the request holds a tools/call (its progress notifications come
 * before the result); with one JSON answer otherwise, and for clients that accept only JSON.
 */
function answersWithSse(accept: string, body: unknown): boolean {
  if (!accept.includes('text/event-stream')) return false;
  if (!wants(accept, 'application/json')) return true;
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((message) => (message as { method?: unknown } | null)?.method === 'tools/call');
}

/** The request as the SDK's web-standard transport takes it, asking for the answer chosen above. */
function webRequest(request: FastifyRequest, sse: boolean): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) headers.set(name, value.join(', '));
  }
  headers.set('accept', sse ? 'application/json, text/event-stream' : 'application/json, text/event-stream;q=0');
  headers.delete('content-length');
  return new Request(`http://localhost${request.url}`, { method: 'POST', headers, body: '' });
}

/**
 * `/mcp`: crewd's deployments as MCP tools over Streamable HTTP (docs/mcp.md). Stateless: each POST is answered by
 * a server and transport of its own, for the key that sent it; GET and DELETE answer 405 (no server-initiated
 * stream, nothing kept to end). The Mcp-Session-Id given at initialize holds no state: it only tells a client's
 * cancellations from another's of the same key. The bearer key is checked by the auth plugin, as under /v1.
 */
export const mcpRoutes: FastifyPluginAsync<McpRouteOptions> = async (app, options) => {
  const { allowedOrigins, ...rest } = options;
  const deps: McpDeps = { ...rest, calls: new CallsInFlight() };
  const anyOrigin = allowedOrigins.includes('*');

  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (origin === undefined || anyOrigin || allowedOrigins.includes(origin)) return;
    return refuse(reply, 403, `Origin ${origin} may not call /mcp: add it to MCP_ALLOWED_ORIGINS to allow it`);
  });

  app.addHook('onSend', async (request, reply) => {
    // An allowed page's browser reads the answer, its session id and its challenge only with these (refusals too).
    const origin = request.headers.origin;
    if (origin !== undefined && (anyOrigin || allowedOrigins.includes(origin))) {
      reply.header('access-control-allow-origin', origin).header('vary', 'origin');
      reply.header('access-control-expose-headers', 'mcp-session-id, www-authenticate');
    }
    // RFC 6750's challenge, which the MCP authorization specification asks of a 401: the key is a bearer token.
    if (reply.statusCode !== 401) return;
    const given = request.headers.authorization !== undefined;
    const error = given ? ', error="invalid_token", error_description="Invalid API key"' : '';
    reply.header('www-authenticate', `Bearer realm="crewd"${error}`);
  });

  // A browser's preflight (it carries no key) of a page in MCP_ALLOWED_ORIGINS; the hook above refused the others.
  app.route({
    method: 'OPTIONS',
    url: '/mcp',
    schema: { hide: true },
    handler: async (_request, reply) =>
      reply
        .status(204)
        .header('access-control-allow-methods', 'POST, GET, DELETE')
        .header('access-control-allow-headers', PREFLIGHT_HEADERS)
        .header('access-control-max-age', '600')
        .send(),
  });

  // A body crewd's parser refuses is answered as JSON-RPC, as the SDK's transport answers it; the rest as elsewhere.
  app.setErrorHandler((error, _request, reply) => {
    if (!(error instanceof UnreadableBody)) throw error;
    if (error.message === NOT_JSON_TYPE) return refuse(reply, 415, `Unsupported Media Type: ${NOT_JSON_TYPE}`);
    return refuse(reply, 400, `Parse error: ${error.message}`, {}, PARSE_ERROR);
  });

  // Out of the OpenAPI document (and the typed client): JSON-RPC messages, described by the MCP specification.
  const schema = {
    hide: true,
    tags: ['mcp'],
    summary: 'MCP Streamable HTTP endpoint: deployments as tools',
    description:
      'JSON-RPC messages of the Model Context Protocol (revision 2025-11-25). POST a message; the answer is JSON, ' +
      'or SSE for tools/call when Accept lists text/event-stream. Notifications answer 202. See docs/mcp.md.',
  };

  app.route({
    method: ['GET', 'DELETE'],
    url: '/mcp',
    schema: { ...schema, operationId: 'mcpWithoutSession' },
    handler: async (_request, reply) =>
      refuse(reply, 405, 'This MCP server is stateless: POST JSON-RPC messages to /mcp', { allow: 'POST' }),
  });

  app.post('/mcp', { schema: { ...schema, operationId: 'mcp' } }, async (request, reply) => {
    const principal = principalOf(request);
    const accept = request.headers.accept ?? '';
    if (!wants(accept, 'application/json') && !accept.includes('text/event-stream')) {
      return refuse(reply, 406, 'Not Acceptable: Accept must list application/json or text/event-stream');
    }
    const sse = answersWithSse(accept, request.body);
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: !sse });
    const given = request.headers['mcp-session-id'];
    const sessionId = typeof given === 'string' && given !== '' ? given : null;
    const server = createMcpServer(deps, principal, sessionId);
    await server.connect(transport);
    const close = () => void server.close().catch(() => {});
    const answer = await transport.handleRequest(webRequest(request, sse), { parsedBody: request.body });
    reply.status(answer.status);
    answer.headers.forEach((value, name) => {
      reply.header(name, value);
    });
    if (answer.status === 200 && initializes(request.body)) reply.header('mcp-session-id', randomUUID());
    if (!answer.body) {
      close();
      return reply.send();
    }
    const body = Readable.fromWeb(answer.body as NodeReadableStream);
    // The answer is over (sent, or the client left): the server and its transport go.
    reply.raw.once('close', close);
    return reply.send(body);
  });
};
