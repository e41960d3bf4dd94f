import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'vitest';
import type { TestContext } from '../helpers/app.js';

/** The official MCP client, connected to the app's /mcp with `key` as its bearer token. */
export async function mcpClient(ctx: TestContext, key: string = ctx.adminKey): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', ctx.baseUrl), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: 'crewd-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** A new organization with its own admin key. */
export async function otherOrganization(ctx: TestContext, name: string): Promise<string> {
  const response = await ctx.call('POST', '/v1/organizations', { body: { name } });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().api_key.key;
}

/** A deployment named `name` whose production version runs `command`; its id. */
export async function deployNamed(
  ctx: TestContext,
  name: string,
  command: string[],
  options: { key?: string; description?: string; mcp?: boolean } = {},
): Promise<string> {
  const { key, ...fields } = options;
  const created = await ctx.call('POST', '/v1/deployments', { body: { name, ...fields }, key });
  expect(created.statusCode, created.body).toBe(201);
  const id = created.json().id as string;
  const version = await ctx.call('POST', `/v1/deployments/${id}/versions`, {
    body: { command, environment: 'production' },
    key,
  });
  expect(version.statusCode, version.body).toBe(201);
  return id;
}

/** The Mcp-Session-Id crewd gave a connected client at initialize. */
export function sessionOf(client: Client): string {
  const id = (client.transport as StreamableHTTPClientTransport | undefined)?.sessionId;
  if (!id) throw new Error('the client has no session id');
  return id;
}

/** One JSON-RPC message POSTed to `baseUrl`/mcp as `key`, under `sessionId`, answered as one JSON body. */
export async function postMessage(
  baseUrl: string,
  key: string,
  sessionId: string,
  message: Record<string, unknown>,
): Promise<{ status: number; body: string }> {
  const response = await fetch(new URL('/mcp', baseUrl), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'application/json',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
  });
  return { status: response.status, body: await response.text() };
}

/** notifications/cancelled of request `requestId`, as a client sends it. */
export const cancelled = (requestId: string | number, reason = 'stopped') => ({
  method: 'notifications/cancelled',
  params: { requestId, reason },
});
