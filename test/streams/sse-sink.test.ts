import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import { fastifySSE } from '@fastify/sse';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSseSink } from '../../src/streams/sse-sink.js';
import { until } from '../helpers/poll.js';

v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

let app: FastifyInstance;
let port: number;
/** The responses of the streams served so far, held weakly: the test asks whether they were let go. */
const responses: Array<WeakRef<http.ServerResponse>> = [];
/** The bytes on a quiet stream's socket just after its sink was given its first event, before the handler went on. */
const writtenAtOnce: number[] = [];

beforeAll(async () => {
  app = Fastify();
  await app.register(fastifySSE, { heartbeatInterval: 0 });
  // As the run event stream serves one: a message, then the sink closes the stream.
  app.get('/stream', { sse: { kind: 'manual', heartbeat: false } }, async (_request, reply) => {
    reply.sse.sendHeaders();
    const sink = createSseSink(reply);
    responses.push(new WeakRef(reply.raw));
    sink.sendUntracked('{"type":"complete"}');
    sink.close();
    await sink.ended;
  });
  // A quiet stream given one event: whether that event's frame is on the socket as send returns.
  app.get('/quiet', { sse: { kind: 'manual', heartbeat: false } }, async (_request, reply) => {
    reply.sse.sendHeaders();
    const sink = createSseSink(reply);
    sink.send({ seq: 1, json: '{"type":"token","data":{}}' });
    writtenAtOnce.push(reply.raw.socket?.bytesWritten ?? 0);
    sink.close();
    await sink.ended;
  });
  // One message, then another once the first was written: served through fastify.inject too.
  app.get('/later', { sse: { kind: 'manual', heartbeat: false } }, async (_request, reply) => {
    reply.sse.sendHeaders();
    const sink = createSseSink(reply);
    sink.sendUntracked('{"n":1}');
    await sink.drained();
    sink.sendUntracked('{"n":2}');
    sink.close();
    await sink.ended;
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
});

afterAll(() => app.close());

/** The stream's body, read to its end over a connection of its own that closes with it. */
function readStream(path = '/stream'): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

describe('SSE sink', () => {
  it('lets a closed stream go once it ended, well before the grace for lagging clients is over', async () => {
    for (let i = 0; i < 5; i++) expect(await readStream()).toContain('data: {"type":"complete"}');
    // The server's side of each connection closes a moment after the client's; the grace is 10 s.
    const released = () => {
      collectGarbage();
      return responses.every((ref) => ref.deref() === undefined);
    };
    await until(released, 5000).catch(() => {});
    expect(responses.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
  });

  it("writes a quiet stream's next frame to its socket at once, not a paced turn later", async () => {
    expect(await readStream('/quiet')).toContain('id: 1\ndata: {"type":"token","data":{}}\n\n');
    expect(writtenAtOnce).toHaveLength(1);
    // The header and the frame, handed to the socket before the handler went on.
    expect(writtenAtOnce[0]).toBeGreaterThan('id: 1\ndata: {"type":"token","data":{}}\n\n'.length);
  });

  it('sends every message through the response when it has no network socket (fastify.inject)', async () => {
    const response = await app.inject({ method: 'GET', url: '/later' });
    expect(response.body).toBe('data: {"n":1}\n\ndata: {"n":2}\n\n');
  });
});
