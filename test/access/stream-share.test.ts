import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../helpers/app.js';
import { otherOrganization } from '../mcp/helpers.js';
import { createRunContext, crew, deploy, type RunContext, startRun, waitForRun } from '../runs/helpers.js';

interface OpenStream {
  status: number;
  body: unknown;
  /** Held so the response is not collected: fetch cancels the body of a response it collects. */
  response: Response;
  close(): void;
}

async function openStream(url: string, key: string): Promise<OpenStream> {
  const controller = new AbortController();
  const response = await fetch(url, { headers: { authorization: `Bearer ${key}` }, signal: controller.signal });
  const body = response.headers.get('content-type')?.includes('json') ? await response.json() : null;
  return { status: response.status, body, response, close: () => controller.abort() };
}

/**
 * An instance serves MAX_EVENT_STREAMS streams, each key at most MAX_EVENT_STREAMS_PER_KEY: an organization that
 * makes keys enough (its admin may make any number) took every stream, and then another organization's clients got
 * 429, their LangGraph `wait` and `join` calls and MCP tool calls with them (each follows its run on a stream). As
 * with run slots (CONTRACTS §12), an organization holds a share of the streams once the installation has several.
 */
describe('event streams shared between organizations', () => {
  let ctx: RunContext;
  const url = (runId: string) => `${ctx.baseUrl}/v1/runs/${runId}/events`;

  beforeAll(async () => {
    ctx = await createRunContext({ MAX_EVENT_STREAMS: '4', MAX_EVENT_STREAMS_PER_KEY: '2' });
  });
  afterAll(async () => ctx?.close());

  it("leave another organization's clients a stream when one organization's keys ask for all", async () => {
    const { deploymentId } = await deploy(ctx, crew('slow.mjs'));
    const mine = (await startRun(ctx, deploymentId, { interval_ms: 200 })).run_id;
    await waitForRun(ctx, mine, ['running']);

    const greedy = await otherOrganization(ctx, 'greedy');
    const keys = [
      greedy,
      await createKey(ctx, 'second', 'member', greedy),
      await createKey(ctx, 'third', 'member', greedy),
    ];
    const theirs = await deploy(ctx, crew('slow.mjs'), { key: greedy });
    const run = (await startRun(ctx, theirs.deploymentId, { interval_ms: 200 }, greedy)).run_id;
    await waitForRun(ctx, run, ['running'], 20_000, greedy);

    // An instance asks whether the installation has several organizations at most once a second (streams.ts).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const held: OpenStream[] = [];
    for (const key of keys) for (let i = 0; i < 2; i++) held.push(await openStream(url(run), key));
    // Three of the four (MAX_EVENT_STREAMS less a quarter), whichever keys ask.
    expect(held.map((stream) => stream.status)).toEqual([200, 200, 200, 429, 429, 429]);
    expect(held[3]?.body).toEqual({
      error: {
        message:
          'This organization already holds 3 open event streams, its share of MAX_EVENT_STREAMS (MAX_EVENT_STREAMS_PER_ORGANIZATION); close one first',
        code: 'rate_limited',
      },
    });

    const ours = await openStream(url(mine), ctx.adminKey);
    expect(ours.status, JSON.stringify(ours.body)).toBe(200);
    for (const stream of [...held, ours]) stream.close();
    await ctx.call('POST', `/v1/runs/${run}/cancel`, { key: greedy });
    await ctx.call('POST', `/v1/runs/${mine}/cancel`);
  });
});
