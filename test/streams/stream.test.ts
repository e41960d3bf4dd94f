import net from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSseText } from '../../src/client/sse.js';
import { ADMIN_KEY } from '../helpers/app.js';
import {
  createRunContext,
  crew,
  dataOf,
  deploy,
  FAST_TIMINGS,
  type RunContext,
  readStream,
  type SseMessage,
  startRun,
  until,
  waitForRun,
} from '../runs/helpers.js';

const dataType = (message: SseMessage) => (message.data as { type?: string } | undefined)?.type;

describe('run event stream', () => {
  let ctx: RunContext;
  let trivial: string;
  let slow: string;

  beforeAll(async () => {
    // Without the feed of other instances' runs, so the polling fallback can be seen on PostgreSQL too. Streams end
    // after 5 s: long after the live runs here end, even on a busy machine, and soon enough to see it happen.
    ctx = await createRunContext({ EVENT_STREAM_TIMEOUT_SECONDS: '5' }, { ...FAST_TIMINGS, crossInstanceFeed: false });
    trivial = (await deploy(ctx, crew('trivial.mjs'))).deploymentId;
    slow = (await deploy(ctx, crew('slow.mjs'))).deploymentId;
  });
  afterAll(() => ctx.close());

  const url = (runId: string, query = '') => `${ctx.baseUrl}/v1/runs/${runId}/events${query}`;

  it('streams ids 1, 2, 3… with data lines, live, and ends with one complete', async () => {
    // Slow enough that the stream opens while the run is going on, even on a busy machine.
    const { run_id } = await startRun(ctx, slow, { ticks: 5, interval_ms: 250 });
    const stream = await readStream(url(run_id));
    expect(stream.status).toBe(200);
    expect(stream.contentType).toContain('text/event-stream');
    const events = stream.messages.filter((message) => message.data !== undefined);
    const ids = events.filter((message) => message.id !== undefined).map((message) => Number(message.id));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(events.map(dataType)).toEqual([
      'run.started',
      'log',
      'log',
      'log',
      'log',
      'log',
      'log',
      'run.completed',
      'complete',
    ]);
    expect(events.at(-1)?.id).toBeUndefined();
    expect(events.filter((message) => dataType(message) === 'complete')).toHaveLength(1);
    expect(stream.body).toMatch(/^id: 1\ndata: \{"type":"run.started"/);
  });

  it('sends an HTTP/1.0 client (no chunked encoding) the same frames, unframed, until the connection closes', async () => {
    const { run_id } = await startRun(ctx, slow, { ticks: 3, interval_ms: 100 });
    const { port } = new URL(ctx.baseUrl);
    const socket = net.connect(Number(port), '127.0.0.1');
    // From the first event: the run may have ended before the stream opens, and the frames are the same replayed.
    socket.write(
      `GET /v1/runs/${run_id}/events?last_event_id=0 HTTP/1.0\r\nAuthorization: Bearer ${ADMIN_KEY}\r\n\r\n`,
    );
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    await new Promise((resolve) => socket.once('close', resolve));
    const response = Buffer.concat(chunks).toString('utf8');
    const headEnd = response.indexOf('\r\n\r\n');
    const head = response.slice(0, headEnd);
    const body = response.slice(headEnd + 4);
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    expect(head.toLowerCase()).not.toContain('transfer-encoding');
    expect(body).toMatch(/^id: 1\ndata: \{"type":"run.started"/);
    const messages = parseSseText(body);
    expect(messages.at(-1)?.data).toMatch(/^\{"type":"complete","status":"succeeded"/);
    const ids = messages.flatMap((message) => (message.id === undefined ? [] : [Number(message.id)]));
    // run.started, three ticks' logs and run.completed at least, in order, with no chunk-size lines between.
    expect(ids.length).toBeGreaterThanOrEqual(5);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(body).not.toMatch(/^[0-9a-f]+\r$/m);
  });

  it('sends exactly one complete at once for a finished run', async () => {
    const { run_id } = await startRun(ctx, trivial, { a: 1 });
    await waitForRun(ctx, run_id);
    const stream = await readStream(url(run_id));
    expect(stream.messages).toEqual([
      { data: { type: 'complete', status: 'succeeded', output: { echo: { a: 1 } }, error: null } },
    ]);
  });

  it('replays after Last-Event-ID (header or query), then complete', async () => {
    const { run_id } = await startRun(ctx, trivial);
    await waitForRun(ctx, run_id);
    const all = await readStream(url(run_id), { headers: { 'last-event-id': '0' } });
    expect(dataOf(all.messages).map((event) => event.type)).toEqual([
      'run.started',
      'task.started',
      'log',
      'task.completed',
      'run.completed',
      'complete',
    ]);
    const header = await readStream(url(run_id), { headers: { 'last-event-id': '3' } });
    expect(header.messages.map((message) => message.id)).toEqual(['4', '5', undefined]);
    const query = await readStream(url(run_id, '?last_event_id=4'));
    expect(query.messages.map((message) => message.id)).toEqual(['5', undefined]);
    const past = await readStream(url(run_id, '?last_event_id=99'));
    expect(dataOf(past.messages).map((event) => event.type)).toEqual(['complete']);
    const atFinal = await readStream(url(run_id, '?last_event_id=5'));
    expect(dataOf(atFinal.messages).map((event) => event.type)).toEqual(['complete']);
  });

  it('resumes a live run without gaps or duplicates', async () => {
    const { run_id } = await startRun(ctx, slow, { ticks: 30, interval_ms: 10 });
    const partial = await readStream(url(run_id), { stopWhen: (message) => message.id === '4' });
    // Keepalive comments (no id) may come between events on a busy machine.
    expect(partial.messages.filter((message) => message.id).map((message) => message.id)).toEqual(['1', '2', '3', '4']);
    const rest = await readStream(url(run_id), { headers: { 'last-event-id': '4' } });
    const ids = rest.messages.filter((message) => message.id).map((message) => Number(message.id));
    expect(ids[0]).toBe(5);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 5));
    expect(dataType(rest.messages.at(-1) as SseMessage)).toBe('complete');
  });

  it('gives a late stream every stored event', async () => {
    const { run_id } = await startRun(ctx, slow, { ticks: 20, interval_ms: 5 });
    await waitForRun(ctx, run_id);
    const stream = await readStream(url(run_id, '?last_event_id=0'));
    const events = dataOf(stream.messages);
    expect(events.filter((event) => event.type === 'log')).toHaveLength(21);
  });

  it('sends keepalive comments while the run is quiet', async () => {
    const { run_id } = await startRun(ctx, slow, { interval_ms: 100_000 });
    const stream = await readStream(url(run_id), {
      stopWhen: (_message, all) => all.filter((message) => message.comment === 'keepalive').length >= 2,
    });
    expect(stream.body).toContain(': keepalive\n\n');
    await ctx.call('POST', `/v1/runs/${run_id}/cancel`);
  });

  it('ends a stream after EVENT_STREAM_TIMEOUT_SECONDS with a timeout event', async () => {
    const { run_id } = await startRun(ctx, slow, { interval_ms: 100_000 });
    const stream = await readStream(url(run_id));
    const last = dataOf(stream.messages).at(-1);
    expect(last).toEqual({
      type: 'timeout',
      message: 'Event stream closed after 5 seconds; reconnect with Last-Event-ID to continue',
    });
    expect((await ctx.call('GET', `/v1/runs/${run_id}`)).json().status).toBe('running');
    await ctx.call('POST', `/v1/runs/${run_id}/cancel`);
  });

  it('falls back to heartbeats from the stored run when live events cannot be had', async () => {
    // A run held by another, living instance: this one has no live feed for it.
    const db = ctx.database.handle.db;
    const { deploymentId, versionId } = await deploy(ctx, crew('trivial.mjs'));
    await db
      .insertInto('instances')
      .values({ id: 'ins_elsewhere', name: 'elsewhere', expires_at: sql`now() + interval '1 hour'` })
      .execute();
    await db
      .insertInto('runs')
      .values({
        id: 'run_elsewhere',
        org_id: 'org_default',
        deployment_id: deploymentId,
        version_id: versionId,
        environment: 'production',
        thread_id: null,
        status: 'running',
        input: '{}',
        instance_id: 'ins_elsewhere',
        started_at: new Date(),
      })
      .execute();
    await db
      .insertInto('run_events')
      .values({ run_id: 'run_elsewhere', seq: 1, type: 'run.started', data: '{"entrypoint":"x"}' })
      .execute();

    // The run ends elsewhere once the stream has sent a heartbeat read from the stored run.
    let finished: Promise<unknown> | undefined;
    const stream = await readStream(url('run_elsewhere'), {
      stopWhen: (message) => {
        if (!finished && (message.data as { type?: string } | undefined)?.type === 'heartbeat') {
          finished = db
            .updateTable('runs')
            .set({ status: 'succeeded', output: '{"done":true}', completed_at: new Date() })
            .where('id', '=', 'run_elsewhere')
            .execute();
        }
        return false;
      },
    });
    await finished;
    const events = dataOf(stream.messages);
    expect(events[0]).toEqual({ type: 'run.started', data: { entrypoint: 'x' } });
    const heartbeats = events.filter((event) => event.type === 'heartbeat');
    expect(heartbeats.length).toBeGreaterThanOrEqual(1);
    expect(heartbeats[0]).toEqual({ type: 'heartbeat', status: 'running' });
    expect(events.at(-1)).toEqual({ type: 'complete', status: 'succeeded', output: { done: true }, error: null });
  });

  it('answers 404 before any stream for an unknown run, and 400 for a bad Last-Event-ID', async () => {
    const response = await fetch(url('run_unknown'), { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: { message: 'Run not found', code: 'not_found' } });
    const { run_id } = await startRun(ctx, trivial);
    const bad = await fetch(url(run_id), { headers: { authorization: `Bearer ${ADMIN_KEY}`, 'last-event-id': 'x' } });
    expect(bad.status).toBe(400);
    const noKey = await fetch(url(run_id));
    expect(noKey.status).toBe(401);
    // Whatever the Accept header says, the route streams (it has nothing else to offer).
    const json = await readStream(url(run_id), { headers: { accept: 'application/json' } });
    expect(json.status).toBe(200);
    expect(json.contentType).toContain('text/event-stream');
  });

  it('sends an error event when the run vanishes under a stream', async () => {
    const { deploymentId, versionId } = await deploy(ctx, crew('trivial.mjs'));
    const db = ctx.database.handle.db;
    await db
      .insertInto('runs')
      .values({
        id: 'run_vanishing',
        org_id: 'org_default',
        deployment_id: deploymentId,
        version_id: versionId,
        environment: 'production',
        thread_id: null,
        status: 'running',
        input: '{}',
        instance_id: 'ins_elsewhere',
        started_at: new Date(),
      })
      .execute();
    // Deleted once the stream is open and has sent something (a keepalive or a heartbeat).
    let deleted: Promise<unknown> | undefined;
    const streamed = await readStream(url('run_vanishing'), {
      stopWhen: () => {
        deleted ??= db.deleteFrom('runs').where('id', '=', 'run_vanishing').execute();
        return false;
      },
    });
    await deleted;
    const events = dataOf(streamed.messages);
    expect(events.at(-1)).toEqual({ type: 'error', message: 'Run not found' });
  });
});

describe('a slow event stream client', () => {
  let ctx: RunContext;
  beforeAll(async () => {
    ctx = await createRunContext();
  });
  afterAll(() => ctx.close());

  it('drops a live client that stops reading, without slowing the run or other clients', async () => {
    const { deploymentId } = await deploy(ctx, crew('large-output.mjs'));
    const input = { mode: 'big_events', count: 40, size: 512 * 1024, delay_ms: 1000 };
    const { run_id } = await startRun(ctx, deploymentId, input);
    // A client that reads the start of the stream, then stops reading while 20 MiB follow.
    const { port } = new URL(ctx.baseUrl);
    const stuck = net.connect(Number(port), '127.0.0.1');
    let received = '';
    stuck.on('data', (chunk) => {
      received += chunk.toString();
    });
    const closed = new Promise((resolve) => stuck.once('close', resolve));
    stuck.write(
      `GET /v1/runs/${run_id}/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${ADMIN_KEY}\r\n\r\n`,
    );
    await until(() => received.includes('"type":"run.started"'));
    stuck.pause();

    // A reader that keeps up as it can; if it falls too far behind it is dropped too, and resumes.
    const ids: number[] = [];
    let last: SseMessage | undefined;
    while (dataType(last ?? {}) !== 'complete') {
      const part = await readStream(`${ctx.baseUrl}/v1/runs/${run_id}/events`, {
        headers: { 'last-event-id': String(ids.at(-1) ?? 0) },
      });
      ids.push(...part.messages.filter((message) => message.id).map((message) => Number(message.id)));
      last = part.messages.at(-1);
    }
    expect(ids).toEqual(Array.from({ length: 42 }, (_, i) => i + 1));
    expect((await waitForRun(ctx, run_id)).status).toBe('succeeded');

    // The server gave up on the stuck client and cut it off before the end.
    stuck.resume();
    await closed;
    expect(received).not.toContain('"type":"complete"');
    expect(received).not.toContain('"type":"timeout"');
    expect(received.length).toBeLessThan(20 * 1024 * 1024);
  });
});
