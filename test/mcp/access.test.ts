import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestContext } from '../helpers/app.js';
import { createRunContext, crew } from '../runs/helpers.js';
import { deployNamed, mcpClient, otherOrganization } from './helpers.js';

const ALLOWED = 'https://assistant.example.com';

describe('/mcp: keys, organizations, Origin and the transport', () => {
  let ctx: TestContext;
  let otherKey: string;
  let client: Client;
  let otherClient: Client;

  /** A raw POST of one JSON-RPC message to /mcp. */
  const post = (message: unknown, headers: Record<string, string> = {}, key: string | null = ctx.adminKey) =>
    fetch(new URL('/mcp', ctx.baseUrl), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
        ...(key === null ? {} : { authorization: `Bearer ${key}` }),
        ...headers,
      },
      body: JSON.stringify(message),
    });
  const listTools = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  const callEcho = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'ours', arguments: {} } };

  beforeAll(async () => {
    ctx = await createRunContext({ MCP_ALLOWED_ORIGINS: `${ALLOWED}, https://other.example.com` });
    await deployNamed(ctx, 'ours', crew('trivial.mjs'));
    otherKey = await otherOrganization(ctx, 'other');
    await deployNamed(ctx, 'theirs', crew('trivial.mjs'), { key: otherKey });
    client = await mcpClient(ctx);
    otherClient = await mcpClient(ctx, otherKey);
  });

  afterAll(async () => {
    await client?.close();
    await otherClient?.close();
    await ctx?.close();
  });

  it('shows an organization only its own deployments, and another’s cannot be called', async () => {
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['ours']);
    expect((await otherClient.listTools()).tools.map((tool) => tool.name)).toEqual(['theirs']);
    await expect(otherClient.callTool({ name: 'ours', arguments: {} })).rejects.toThrow('Unknown tool: ours');
    const theirs = await otherClient.callTool({ name: 'theirs', arguments: { n: 1 } });
    expect(theirs.structuredContent).toEqual({ echo: { n: 1 } });
  });

  it('refuses a request without a key, or with a wrong one, with 401', async () => {
    const missing = await post(listTools, {}, null);
    expect(missing.status).toBe(401);
    const wrong = await post(listTools, {}, 'not-a-key-of-this-service');
    expect(wrong.status).toBe(401);
  });

  it('answers a 401 with a Bearer challenge in WWW-Authenticate, as the MCP authorization specification asks', async () => {
    const missing = await post(listTools, {}, null);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="crewd"');
    const wrong = await post(listTools, {}, 'not-a-key-of-this-service');
    expect(wrong.headers.get('www-authenticate')).toBe(
      'Bearer realm="crewd", error="invalid_token", error_description="Invalid API key"',
    );
  });

  it('refuses an Origin not in MCP_ALLOWED_ORIGINS with 403, and answers an allowed one', async () => {
    const refused = await post(listTools, { origin: 'https://evil.example.net' });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: { message: expect.stringContaining('MCP_ALLOWED_ORIGINS') } });
    const allowed = await post(listTools, { origin: ALLOWED });
    expect(allowed.status).toBe(200);
  });

  it('answers the CORS preflight of an allowed Origin, and lets its page read the session id', async () => {
    // What a browser sends before an MCP client's POST with a key: no Authorization of its own.
    const preflight = (origin: string) =>
      fetch(new URL('/mcp', ctx.baseUrl), {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,mcp-protocol-version,mcp-session-id',
        },
      });
    const asked = await preflight(ALLOWED);
    expect(asked.status).toBe(204);
    expect(asked.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(asked.headers.get('access-control-allow-methods')).toContain('POST');
    for (const header of ['authorization', 'content-type', 'mcp-protocol-version', 'mcp-session-id']) {
      expect(asked.headers.get('access-control-allow-headers')).toContain(header);
    }
    expect((await preflight('https://evil.example.net')).status).toBe(403);

    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'page', version: '1' },
      },
    };
    const initialized = await post(initialize, { origin: ALLOWED });
    expect(initialized.status).toBe(200);
    expect(initialized.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(initialized.headers.get('access-control-expose-headers')).toContain('mcp-session-id');
    const unauthorized = await post(listTools, { origin: ALLOWED }, null);
    expect(unauthorized.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(unauthorized.headers.get('access-control-expose-headers')).toContain('www-authenticate');
    const other = await post(listTools);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers a body that is not JSON as the SDK’s transport does: a JSON-RPC parse error, 415 for another type', async () => {
    const raw = (body: string, contentType: string) =>
      fetch(new URL('/mcp', ctx.baseUrl), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ctx.adminKey}`,
          'content-type': contentType,
          accept: 'application/json, text/event-stream',
        },
        body,
      });
    const broken = await raw('{"jsonrpc": "2.0", "id": 1, "method": "tools/li', 'application/json');
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
    const text = await raw(JSON.stringify(listTools), 'text/plain');
    expect(text.status).toBe(415);
    expect(await text.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
    // Elsewhere, crewd's own error body stays.
    const v1 = await ctx.call('POST', '/v1/deployments', { headers: { 'content-type': 'text/plain' } });
    expect(v1.json()).toMatchObject({ error: { code: 'bad_request' } });
  });

  it('answers JSON, or SSE for tools/call when Accept lists text/event-stream', async () => {
    const list = await post(listTools);
    expect(list.headers.get('content-type')).toContain('application/json');
    const listed = (await list.json()) as { result: { tools: unknown[] } };
    expect(listed.result.tools).toHaveLength(1);

    const streamed = await post(callEcho);
    expect(streamed.headers.get('content-type')).toContain('text/event-stream');
    expect(await streamed.text()).toContain('"structuredContent":{"echo":{}}');

    const json = await post(callEcho, { accept: 'application/json' });
    expect(json.headers.get('content-type')).toContain('application/json');
    const answered = (await json.json()) as { result: { structuredContent: unknown } };
    expect(answered.result.structuredContent).toEqual({ echo: {} });
  });

  it('answers a notification with 202, GET with 405, and an unknown MCP-Protocol-Version with 400', async () => {
    const notification = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(notification.status).toBe(202);
    const get = await fetch(new URL('/mcp', ctx.baseUrl), {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${ctx.adminKey}` },
    });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const old = await post(listTools, { 'mcp-protocol-version': '1999-01-01' });
    expect(old.status).toBe(400);
    expect(await old.text()).toContain('Unsupported protocol version');
  });
});
