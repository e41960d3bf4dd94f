import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRunContext,
  crew,
  deploy,
  type RunContext,
  readStream,
  startRun,
  until,
  waitForRun,
} from '../runs/helpers.js';

/** The value of one sample line of the Prometheus text, e.g. `crewd_runs{status="running"}`. */
function sample(text: string, name: string): number {
  const line = text.split('\n').find((entry) => entry.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : Number.NaN;
}

describe('GET /metrics', () => {
  let ctx: RunContext;
  beforeAll(async () => {
    ctx = await createRunContext();
  });
  afterAll(() => ctx.close());

  const scrape = async () => {
    const response = await ctx.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/plain');
    return response.body;
  };

  it('counts runs, relayed events, streams, request latency and active runs', async () => {
    const before = await scrape();
    expect(sample(before, 'crewd_runs{status="running"}')).toBe(0);
    expect(sample(before, 'crewd_open_streams')).toBe(0);

    const { deploymentId } = await deploy(ctx, crew('trivial.mjs'));
    const ok = await startRun(ctx, deploymentId, { n: 1 });
    await readStream(`${ctx.baseUrl}/v1/runs/${ok.run_id}/events?last_event_id=0`);
    await waitForRun(ctx, ok.run_id);

    const failing = await deploy(ctx, crew('failing.mjs'));
    const bad = await startRun(ctx, failing.deploymentId);
    await waitForRun(ctx, bad.run_id);

    const slow = await deploy(ctx, crew('slow.mjs'));
    const pending = await startRun(ctx, slow.deploymentId);
    await waitForRun(ctx, pending.run_id, ['running']);

    // Streams report relayed events when they close, which follows the client's disconnect.
    const after = await until(async () => {
      const text = await scrape();
      return sample(text, 'crewd_open_streams') === 0 ? text : null;
    });
    expect(sample(after, 'crewd_runs_started_total')).toBe(3);
    expect(sample(after, 'crewd_runs_finished_total{status="succeeded"}')).toBe(1);
    expect(sample(after, 'crewd_runs_finished_total{status="failed"}')).toBe(1);
    expect(sample(after, 'crewd_runs{status="running"}')).toBe(1);
    expect(sample(after, 'crewd_events_relayed_total')).toBeGreaterThanOrEqual(5);
    expect(sample(after, 'crewd_open_streams')).toBe(0);
    expect(after).toMatch(
      /crewd_http_request_duration_seconds_count\{method="POST",route="\/v1\/runs",status_code="202"\} 3/,
    );

    await ctx.call('POST', `/v1/runs/${pending.run_id}/cancel`);
    await waitForRun(ctx, pending.run_id);
    const end = await scrape();
    expect(sample(end, 'crewd_runs_finished_total{status="canceled"}')).toBe(1);
    expect(sample(end, 'crewd_runs{status="running"}')).toBe(0);
  });
});
