import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestContext } from '../helpers/app.js';
import { createRunContext, crew, until } from '../runs/helpers.js';
import { deployNamed, mcpClient } from './helpers.js';

/** The runs of a deployment, newest first. */
async function runsOf(ctx: TestContext, deploymentId: string) {
  const response = await ctx.call('GET', `/v1/runs?deployment_id=${deploymentId}`);
  return response.json().runs as Array<{ id: string; status: string }>;
}

describe('/mcp tools/call: cancellation and interrupts', () => {
  let ctx: TestContext;
  let client: Client;
  let slowId: string;
  let askingId: string;

  beforeAll(async () => {
    ctx = await createRunContext();
    slowId = await deployNamed(ctx, 'slow', crew('slow.mjs'));
    askingId = await deployNamed(ctx, 'asking', crew('interrupting.mjs'));
    client = await mcpClient(ctx);
  });

  afterAll(async () => {
    await client?.close();
    await ctx?.close();
  });

  it('cancels the run when the client cancels the call', async () => {
    const controller = new AbortController();
    const call = client.callTool({ name: 'slow', arguments: { interval_ms: 20 } }, undefined, {
      signal: controller.signal,
      // The first progress notification: the run is going.
      onprogress: () => controller.abort('the user stopped it'),
    });
    await expect(call).rejects.toThrow('the user stopped it');
    const [run] = await until(async () => {
      const runs = await runsOf(ctx, slowId);
      return runs[0]?.status === 'canceled' ? runs : null;
    });
    expect(run?.status).toBe('canceled');
  });

  it('cancels only the calling client’s run when two clients of one key use the same request id', async () => {
    const other = await mcpClient(ctx);
    try {
      // Both clients number their requests alike: the tools/call of each has the same id.
      const first = new AbortController();
      let firstGoing: () => void = () => {};
      const firstStarted = new Promise<void>((resolve) => {
        firstGoing = resolve;
      });
      const firstCall = client.callTool({ name: 'slow', arguments: { interval_ms: 20 } }, undefined, {
        signal: first.signal,
        onprogress: () => firstGoing(),
      });
      await firstStarted;
      let secondGoing: () => void = () => {};
      const secondStarted = new Promise<void>((resolve) => {
        secondGoing = resolve;
      });
      const secondCall = other.callTool({ name: 'slow', arguments: { interval_ms: 20, ticks: 25 } }, undefined, {
        onprogress: () => secondGoing(),
      });
      await secondStarted;
      first.abort('only the first');
      await expect(firstCall).rejects.toThrow('only the first');
      const second = await secondCall;
      expect(second.isError, JSON.stringify(second.content)).toBeFalsy();
      expect(second.structuredContent).toEqual({ ticks: 25 });
    } finally {
      await other.close();
    }
  });

  it('answers an interrupt with its question, and a second call with resume and thread_id continues', async () => {
    const thread = await ctx.call('POST', '/v1/threads', { body: { deployment_id: askingId } });
    expect(thread.statusCode, thread.body).toBe(200);
    const threadId = thread.json().thread_id as string;

    const asked = await client.callTool({ name: 'asking', arguments: { thread_id: threadId, ask: 'Send it?' } });
    expect(asked.isError).toBeFalsy();
    const text = (asked.content as Array<{ text: string }>)[0]?.text ?? '';
    expect(text).toContain('Send it?');
    expect(text).toContain(`"thread_id": "${threadId}"`);
    expect(asked.structuredContent).toEqual({
      interrupts: [{ id: 'ask-1', value: { question: 'Send it?' } }],
      thread_id: threadId,
    });
    const state = await ctx.call('GET', `/v1/threads/${threadId}`);
    expect(state.json().status).toBe('interrupted');

    const resumed = await client.callTool({ name: 'asking', arguments: { thread_id: threadId, resume: 'yes' } });
    expect(resumed.isError).toBeFalsy();
    expect(resumed.structuredContent).toEqual({ resumed: 'yes', from: { step: 1, waiting: 'Send it?' } });
    expect(resumed._meta?.['crewd/thread_id']).toBe(threadId);
  });

  it('refuses resume without a thread, and a resume of a thread that waits for nothing, as tool errors', async () => {
    const alone = await client.callTool({ name: 'asking', arguments: { resume: 'yes' } });
    expect(alone.isError).toBe(true);
    expect(alone.content).toEqual([{ type: 'text', text: 'resume needs the thread_id of the interrupted call' }]);

    const thread = await ctx.call('POST', '/v1/threads', { body: { deployment_id: askingId } });
    const threadId = thread.json().thread_id as string;
    const idle = await client.callTool({ name: 'asking', arguments: { thread_id: threadId, resume: 'yes' } });
    expect(idle.isError).toBe(true);
    expect((idle.content as Array<{ text: string }>)[0]?.text).toContain(threadId);
  });
});

describe('/mcp tools/call longer than MCP_CALL_WAIT_SECONDS', () => {
  let ctx: TestContext;
  let client: Client;

  beforeAll(async () => {
    ctx = await createRunContext({ MCP_CALL_WAIT_SECONDS: '0.5' });
    await deployNamed(ctx, 'endless', crew('slow.mjs'));
    client = await mcpClient(ctx);
  });

  afterAll(async () => {
    await client?.close();
    await ctx?.close();
  });

  it('answers with the run’s id, and the run goes on', async () => {
    const result = await client.callTool({ name: 'endless', arguments: {} });
    expect(result.isError).toBeFalsy();
    const runId = result._meta?.['crewd/run_id'] as string;
    expect(result._meta?.['crewd/status']).toBe('running');
    expect((result.content as Array<{ text: string }>)[0]?.text).toContain(`GET /v1/runs/${runId}`);
    const run = await ctx.call('GET', `/v1/runs/${runId}`);
    expect(run.json().status).toBe('running');
    const canceled = await ctx.call('POST', `/v1/runs/${runId}/cancel`);
    expect(canceled.statusCode, canceled.body).toBe(200);
  });
});
