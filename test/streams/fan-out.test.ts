import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SseParser } from '../../src/client/sse.js';
import { ADMIN_KEY } from '../helpers/app.js';
import { createRunContext, crew, deploy, type RunContext, startRun } from '../runs/helpers.js';

interface Followed {
  ids: number[];
  bigEvents: number;
  last: string;
}

/**
 * Follows a stream from its first event (a stream opened late replays what it missed) to its end,
 * with the client's incremental parser, so hundreds of them in this process stay cheap.
 */
function follow(baseUrl: string, runId: string, agent: http.Agent): Promise<Followed> {
  return new Promise((resolve, reject) => {
    const seen: Followed = { ids: [], bigEvents: 0, last: '' };
    http
      .get(
        `${baseUrl}/v1/runs/${runId}/events?last_event_id=0`,
        { agent, headers: { authorization: `Bearer ${ADMIN_KEY}` } },
        (res) => {
          if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`));
          const parser = new SseParser((message) => {
            if (message.id !== undefined) seen.ids.push(Number(message.id));
            if (message.data === undefined) return;
            if (message.data.includes('"message":"big ')) seen.bigEvents++;
            seen.last = message.data.slice(0, 194);
          });
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => parser.push(chunk));
          res.on('end', () => resolve(seen));
          res.on('error', reject);
        },
      )
      .on('error', reject);
  });
}

describe('a burst to many streams', () => {
  let ctx: RunContext;
  let deploymentId: string;
  beforeAll(async () => {
    ctx = await createRunContext();
    deploymentId = (await deploy(ctx, crew('large-output.mjs'))).deploymentId;
  });
  afterAll(() => ctx.close());

  it('reaches every stream whole and in order, though written over many paced turns', async () => {
    // 300 streams × 4 events of 50 kB: 60 MB to write, more than a turn's 4 MiB and 256 streams.
    const STREAMS = 300;
    const run = await startRun(ctx, deploymentId, { mode: 'big_events', count: 4, size: 50_000, delay_ms: 4000 });
    const agent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
    try {
      const followed = await Promise.all(Array.from({ length: STREAMS }, () => follow(ctx.baseUrl, run.run_id, agent)));
      for (const stream of followed) {
        expect(stream.ids).toEqual(Array.from({ length: stream.ids.length }, (_, i) => i + 1));
        expect(stream.bigEvents).toBe(4);
        expect(stream.last).toMatch(/^\{"type":"complete","status":"succeeded"/);
      }
    } finally {
      agent.destroy();
    }
  });
});
