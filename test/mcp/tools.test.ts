import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ListPromptsResultSchema, ListResourcesResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestContext } from '../helpers/app.js';
import { createRunContext, crew } from '../runs/helpers.js';
import { deployNamed, mcpClient } from './helpers.js';

describe('/mcp: deployments as tools', () => {
  let ctx: TestContext;
  let client: Client;

  beforeAll(async () => {
    ctx = await createRunContext();
    await deployNamed(ctx, 'echo crew', crew('trivial.mjs'), { description: 'Echoes its input' });
    await deployNamed(ctx, 'failing', crew('failing.mjs'));
    await deployNamed(ctx, 'hidden', crew('trivial.mjs'), { mcp: false });
    // No production version: no tool.
    const bare = await ctx.call('POST', '/v1/deployments', { body: { name: 'no-version' } });
    expect(bare.statusCode).toBe(201);
    client = await mcpClient(ctx);
  });

  afterAll(async () => {
    await client?.close();
    await ctx?.close();
  });

  it('initializes on revision 2025-11-25 and advertises tools only', () => {
    expect(client.getServerVersion()?.name).toBe('crewd');
    const capabilities = client.getServerCapabilities();
    expect(capabilities?.tools).toBeDefined();
    expect(capabilities?.resources).toBeUndefined();
    expect(capabilities?.prompts).toBeUndefined();
  });

  it('lists each deployment with a production version and the switch on, its name made valid', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['echo_crew', 'failing']);
    const echo = tools.find((tool) => tool.name === 'echo_crew');
    expect(echo?.description).toBe('Echoes its input');
    expect(echo?.inputSchema).toMatchObject({
      type: 'object',
      properties: { thread_id: { type: 'string' }, resume: {} },
    });
    expect(tools.find((tool) => tool.name === 'failing')?.description).toContain('failing');
  });

  it('answers empty lists of resources and prompts', async () => {
    const resources = await client.request({ method: 'resources/list' }, ListResourcesResultSchema);
    expect(resources.resources).toEqual([]);
    const prompts = await client.request({ method: 'prompts/list' }, ListPromptsResultSchema);
    expect(prompts.prompts).toEqual([]);
  });

  it('calls a command crew: its output as structured content and text, the run id in _meta', async () => {
    const result = await client.callTool({ name: 'echo_crew', arguments: { topic: 'otters' } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ echo: { topic: 'otters' } });
    expect(result.content).toEqual([{ type: 'text', text: JSON.stringify({ echo: { topic: 'otters' } }) }]);
    const runId = result._meta?.['crewd/run_id'] as string;
    const run = await ctx.call('GET', `/v1/runs/${runId}`);
    expect(run.json()).toMatchObject({ status: 'succeeded', input: { topic: 'otters' } });
  });

  it('turns the run events into progress notifications when a progress token is sent', async () => {
    const messages: string[] = [];
    const runIds = new Set<unknown>();
    const result = await client.callTool({ name: 'echo_crew', arguments: {} }, undefined, {
      onprogress: (progress) => {
        messages.push(`${progress.progress} ${progress.message}`);
        // The SDK hands over the notification's params whole, _meta included, though its type leaves it out.
        runIds.add((progress as { _meta?: Record<string, unknown> })._meta?.['crewd/run_id']);
      },
    });
    expect(result.isError).toBeFalsy();
    // Each notification names the run the result names.
    expect([...runIds]).toEqual([result._meta?.['crewd/run_id']]);
    expect(messages).toEqual([
      '1 run.started',
      '2 task.started',
      '3 log: echoing the input',
      '4 task.completed',
      '5 run.completed',
    ]);
  });

  it('answers a failed run as a tool error with the run’s error', async () => {
    const result = await client.callTool({ name: 'failing', arguments: {} });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: 'the crew could not finish its task' }]);
  });

  it('takes a deployment off the tools when PATCH sets mcp to false, and back', async () => {
    const id = await deployNamed(ctx, 'switched', crew('trivial.mjs'));
    const names = async () => (await client.listTools()).tools.map((tool) => tool.name);
    expect(await names()).toContain('switched');
    const off = await ctx.call('PATCH', `/v1/deployments/${id}`, { body: { mcp: false, description: 'Off for now' } });
    expect(off.statusCode, off.body).toBe(200);
    expect(off.json()).toMatchObject({ mcp: false, description: 'Off for now' });
    expect(await names()).not.toContain('switched');
    const on = await ctx.call('PATCH', `/v1/deployments/${id}`, { body: { mcp: true } });
    expect(on.json().mcp).toBe(true);
    expect(await names()).toContain('switched');
    const empty = await ctx.call('PATCH', `/v1/deployments/${id}`, { body: {} });
    expect(empty.statusCode).toBe(400);
  });

  it('names tools as Claude’s and OpenAI’s hosts take them: letters, digits, _ and -, at most 64', async () => {
    // Claude Desktop withholds every tool of a server when one name does not match; OpenAI's API refuses the request.
    const hostPattern = /^[a-zA-Z0-9_-]{1,64}$/;
    const dotted = await deployNamed(ctx, 'summarize.v2', crew('trivial.mjs'));
    await deployNamed(ctx, 'summarize v2', crew('trivial.mjs'));
    await deployNamed(ctx, `long ${'x'.repeat(95)}`, crew('trivial.mjs'));
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    for (const name of names) expect(name).toMatch(hostPattern);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain('summarize_v2');
    expect(names).toContain(`long_${'x'.repeat(59)}`);
    const result = await client.callTool({ name: 'summarize_v2', arguments: { n: 2 } });
    expect(result._meta?.['crewd/run_id']).toBeDefined();
    const run = await ctx.call('GET', `/v1/runs/${result._meta?.['crewd/run_id'] as string}`);
    expect(run.json().deployment_id).toBe(dotted);
  });

  it('refuses an unknown tool, and a tool switched off', async () => {
    await expect(client.callTool({ name: 'hidden', arguments: {} })).rejects.toThrow('Unknown tool: hidden');
  });
});
