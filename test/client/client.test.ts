import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, createCrewdClient, type StreamEvent, streamEvents, unwrap } from '../../src/client/index.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { createRunContext, crew, deploy, type RunContext, startRun } from '../runs/helpers.js';

describe('typed client', () => {
  let ctx: RunContext;

  beforeAll(async () => {
    ctx = await createRunContext();
  });
  afterAll(async () => ctx?.close());

  it('creates, reads and lists through typed calls', async () => {
    const client = createCrewdClient({ baseUrl: ctx.baseUrl, apiKey: ADMIN_KEY });
    const deployment = await unwrap(client.POST('/v1/deployments', { body: { name: 'typed' } }));
    expect(deployment.id).toMatch(/^dep_/);
    const version = await unwrap(
      client.POST('/v1/deployments/{id}/versions', {
        params: { path: { id: deployment.id } },
        body: { command: crew('trivial.mjs'), env: {}, environment: 'production' },
      }),
    );
    expect(version.number).toBe(1);
    const run = await unwrap(client.POST('/v1/runs', { body: { deployment_id: deployment.id, input: { a: 1 } } }));
    const events: StreamEvent[] = [];
    for await (const event of streamEvents({
      url: `${ctx.baseUrl}/v1/runs/${run.run_id}/events`,
      apiKey: ADMIN_KEY,
      lastEventId: 0,
    })) {
      events.push(event);
    }
    expect(events.at(-1)?.data).toMatchObject({ type: 'complete', status: 'succeeded', output: { echo: { a: 1 } } });
    const listed = await unwrap(client.GET('/v1/runs', { params: { query: { deployment_id: deployment.id } } }));
    expect(listed.runs.map((item) => item.id)).toEqual([run.run_id]);
  });

  it('throws the API’s error message and status', async () => {
    const client = createCrewdClient({ baseUrl: ctx.baseUrl, apiKey: ADMIN_KEY });
    const missing = unwrap(client.GET('/v1/runs/{id}', { params: { path: { id: 'run_missing' } } }));
    await expect(missing).rejects.toThrow(new ApiError('Run not found', 404, 'not_found'));
    await expect(missing).rejects.toMatchObject({ status: 404, code: 'not_found' });
    const anonymous = createCrewdClient({ baseUrl: ctx.baseUrl });
    await expect(unwrap(anonymous.GET('/v1/runs'))).rejects.toMatchObject({ message: 'Invalid API key', status: 401 });
  });

  it('refuses a stream of an unknown run with the API’s message', async () => {
    const events = streamEvents({ url: `${ctx.baseUrl}/v1/runs/run_missing/events`, apiKey: ADMIN_KEY });
    await expect(events.next()).rejects.toThrow('Run not found');
  });

  it('resumes a dropped stream with Last-Event-ID: no event lost, none repeated', async () => {
    const { deploymentId } = await deploy(ctx, crew('slow.mjs'));
    const run = await startRun(ctx, deploymentId, { ticks: 30, interval_ms: 60 });
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(ctx.baseUrl).port) });
    try {
      const events: StreamEvent[] = [];
      let cut = false;
      for await (const event of streamEvents({
        url: proxy.via(`${ctx.baseUrl}/v1/runs/${run.run_id}/events`),
        apiKey: ADMIN_KEY,
      })) {
        events.push(event);
        if (!cut && (event.seq ?? 0) >= 5) {
          cut = true;
          proxy.cut();
          setTimeout(() => proxy.restore(), 100);
        }
      }
      expect(cut).toBe(true);
      const seqs = events.map((event) => event.seq).filter((seq): seq is number => seq !== null);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
      const messages = events.map((event) => (event.data.data as { message?: string } | undefined)?.message);
      expect(messages).toContain('tick 30');
      expect(events.at(-1)?.data).toMatchObject({ type: 'complete', status: 'succeeded' });
    } finally {
      await proxy.close();
    }
  });
});

describe('streamEvents past the stream’s lifetime', () => {
  let short: RunContext;

  beforeAll(async () => {
    short = await createRunContext({ EVENT_STREAM_TIMEOUT_SECONDS: '0.5' });
  });
  afterAll(async () => short?.close());

  it('ends at `timeout` by default; with untilComplete reopens the stream after it, to the `complete`', async () => {
    const { deploymentId } = await deploy(short, crew('slow.mjs'));
    const run = await startRun(short, deploymentId, { ticks: 12, interval_ms: 150 });
    const url = `${short.baseUrl}/v1/runs/${run.run_id}/events`;

    const once: StreamEvent[] = [];
    for await (const event of streamEvents({ url, apiKey: ADMIN_KEY, lastEventId: 0 })) once.push(event);
    expect(once.at(-1)?.data.type).toBe('timeout');

    const all: StreamEvent[] = [];
    for await (const event of streamEvents({ url, apiKey: ADMIN_KEY, lastEventId: 0, untilComplete: true })) {
      all.push(event);
    }
    const types = all.map((event) => event.data.type);
    expect(types.filter((type) => type === 'timeout').length).toBeGreaterThan(0);
    expect(types.at(-1)).toBe('complete');
    const seqs = all.map((event) => event.seq).filter((seq): seq is number => seq !== null);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  });
});
