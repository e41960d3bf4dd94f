import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestContext } from '../helpers/app.js';
import { createRunContext, crew, until } from '../runs/helpers.js';
import { cancelled, deployNamed, mcpClient, otherOrganization, postMessage, sessionOf } from './helpers.js';

/** The newest run of a deployment. */
async function lastRun(ctx: TestContext, deploymentId: string) {
  const response = await ctx.call('GET', `/v1/runs?deployment_id=${deploymentId}`);
  return (response.json().runs as Array<{ id: string; status: string }>)[0];
}

describe('/mcp notifications/cancelled: whose calls it reaches', () => {
  let ctx: TestContext;
  let client: Client;
  let slowId: string;
  let otherKey: string;

  beforeAll(async () => {
    ctx = await createRunContext();
    slowId = await deployNamed(ctx, 'slow', crew('slow.mjs'));
    otherKey = await otherOrganization(ctx, 'other org');
    client = await mcpClient(ctx);
  });

  afterAll(async () => {
    await client?.close();
    await ctx?.close();
  });

  it('does not cancel a call of another organization that names its session and request id', async () => {
    const session = sessionOf(client);
    let going: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      going = resolve;
    });
    const call = client.callTool({ name: 'slow', arguments: { interval_ms: 20, ticks: 30 } }, undefined, {
      onprogress: () => going(),
    });
    await started;
    // The other organization's key, the victim's session id, and every request id the victim's client has used.
    for (let id = 0; id <= 5; id++) {
      const sent = await postMessage(ctx.baseUrl, otherKey, session, cancelled(id, 'an attack'));
      expect(sent.status).toBe(202);
    }
    const result = await call;
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(result.structuredContent).toEqual({ ticks: 30 });
    expect((await lastRun(ctx, slowId))?.status).toBe('succeeded');
  });

  it('cancels a call whose cancellation came before it (the two crossed on their way)', async () => {
    const session = `crossed-${Date.now()}`;
    const sent = await postMessage(ctx.baseUrl, ctx.adminKey, session, cancelled(7, 'changed my mind'));
    expect(sent.status).toBe(202);
    const answer = await postMessage(ctx.baseUrl, ctx.adminKey, session, {
      id: 7,
      method: 'tools/call',
      params: { name: 'slow', arguments: { interval_ms: 20 } },
    });
    expect(answer.status, answer.body).toBe(200);
    const result = JSON.parse(answer.body).result;
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toBe('The call was canceled, and its run with it');
    const run = await until(async () => {
      const found = await lastRun(ctx, slowId);
      return found?.status === 'canceled' ? found : null;
    });
    expect(run.id).toBe(result._meta['crewd/run_id']);
  });
});
