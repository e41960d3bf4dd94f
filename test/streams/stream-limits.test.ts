import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../helpers/app.js';
import { createRunContext, crew, deploy, type RunContext, startRun, until, waitForRun } from '../runs/helpers.js';

interface OpenStream {
  status: number;
  body: unknown;
  /** Held so the response is not collected: fetch cancels the body of a response it collects. */
  response: Response;
  close(): void;
}

/** Opens a stream over a real socket and keeps it open until `close`; a refusal's JSON body is read. */
async function openStream(url: string, key: string, headers: Record<string, string> = {}): Promise<OpenStream> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${key}`, ...headers },
    signal: controller.signal,
  });
  const body = response.headers.get('content-type')?.includes('json') ? await response.json() : null;
  return { status: response.status, body, response, close: () => controller.abort() };
}

async function createKey(ctx: RunContext, name: string): Promise<string> {
  const response = await ctx.call('POST', '/v1/api-keys', { body: { name, role: 'member' } });
  return response.json().key;
}

describe('event stream caps', () => {
  let ctx: RunContext;
  let runId: string;

  beforeAll(async () => {
    ctx = await createRunContext({ MAX_EVENT_STREAMS_PER_KEY: '2', MAX_EVENT_STREAMS: '3' });
    const { deploymentId } = await deploy(ctx, crew('slow.mjs'));
    runId = (await startRun(ctx, deploymentId, { interval_ms: 200 })).run_id;
    await waitForRun(ctx, runId, ['running']);
  });
  afterAll(async () => {
    await ctx.call('POST', `/v1/runs/${runId}/cancel`);
    await ctx.close();
  });

  const url = (id: string) => `${ctx.baseUrl}/v1/runs/${id}/events`;
  const openCount = () => until(async () => ctx.app.inject({ method: 'GET', url: '/metrics' })).then((r) => r.body);

  it('answers 429 rate_limited past the per-key cap and past the cap in all, and frees a place when a stream ends', async () => {
    const other = await createKey(ctx, 'second');
    const third = await createKey(ctx, 'third');
    const first = [await openStream(url(runId), ADMIN_KEY), await openStream(url(runId), ADMIN_KEY)];
    expect(first.map((stream) => stream.status)).toEqual([200, 200]);

    const overKey = await openStream(url(runId), ADMIN_KEY);
    expect(overKey.status).toBe(429);
    expect(overKey.body).toEqual({
      error: {
        message:
          'This API key already holds 2 open event streams, the most MAX_EVENT_STREAMS_PER_KEY allows; close one first',
        code: 'rate_limited',
      },
    });

    const another = await openStream(url(runId), other);
    expect(another.status).toBe(200);
    const overAll = await openStream(url(runId), third);
    expect(overAll.status).toBe(429);
    expect(overAll.body).toEqual({
      error: {
        message: 'This instance already serves 3 event streams, the most MAX_EVENT_STREAMS allows; retry later',
        code: 'rate_limited',
      },
    });

    first[0]?.close();
    await until(async () => /crewd_open_streams 2\b/.test(await openCount()));
    const again = await openStream(url(runId), ADMIN_KEY);
    expect(again.status).toBe(200);
    for (const stream of [first[1], another, again]) stream?.close();
    await until(async () => /crewd_open_streams 0\b/.test(await openCount()));
  });

  it('gives the place back of a stream refused for an unknown run', async () => {
    for (let i = 0; i < 4; i += 1) {
      const unknown = await openStream(url('run_unknown'), ADMIN_KEY);
      expect(unknown.status).toBe(404);
    }
    const streams = [await openStream(url(runId), ADMIN_KEY), await openStream(url(runId), ADMIN_KEY)];
    expect(streams.map((stream) => stream.status)).toEqual([200, 200]);
    for (const stream of streams) stream.close();
    await until(async () => /crewd_open_streams 0\b/.test(await openCount()));
  });

  it.each([
    [{ 'last-event-id': '2147483648' }, ''],
    [{ 'last-event-id': '99999999999999999999' }, ''],
    [{}, '?last_event_id=2147483648'],
  ])('answers 400 for a resume point no event id can reach (%o %s)', async (headers, query) => {
    const response = await fetch(`${url(runId)}${query}`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}`, ...headers },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: { message: 'Last-Event-ID must be an event id from 0 to 2147483647', code: 'bad_request' },
    });
  });

  it('accepts the largest event id as a resume point', async () => {
    const stream = await openStream(url(runId), ADMIN_KEY, { 'last-event-id': '2147483647' });
    expect(stream.status).toBe(200);
    stream.close();
    await until(async () => /crewd_open_streams 0\b/.test(await openCount()));
  });
});
