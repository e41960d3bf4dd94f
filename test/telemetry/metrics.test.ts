import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext, startRun, waitForRun } from '../runs/helpers.js';

describe('per-deployment run metrics on /metrics (CONTRACTS §15)', () => {
  let ctx: RunContext;
  let deploymentId: string;

  beforeAll(async () => {
    ctx = await createRunContext();
    ({ deploymentId } = await deploy(ctx, crew('scripted.mjs')));
    const usage = { input_tokens: 1000, cached_input_tokens: 200, output_tokens: 500, reasoning_tokens: 100 };
    const events = [{ type: 'llm.call', data: { model: 'gpt-4o-mini', usage } }];
    for (let i = 0; i < 2; i++) await waitForRun(ctx, (await startRun(ctx, deploymentId, { events })).run_id);
  });
  afterAll(() => ctx?.close());

  it('counts runs by status, times their duration and queue wait, and sums tokens by kind and model, and cost', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
    expect(response.statusCode).toBe(200);
    const text = response.body;
    const value = (line: string) => {
      const found = text.split('\n').find((row) => row.startsWith(`${line} `));
      return found === undefined ? undefined : Number(found.slice(line.length + 1));
    };
    const of = `deployment="${deploymentId}"`;
    expect(value(`crewd_deployment_runs_total{${of},status="succeeded"}`)).toBe(2);
    expect(value(`crewd_deployment_run_duration_seconds_count{${of}}`)).toBe(2);
    expect(value(`crewd_deployment_queue_wait_seconds_count{${of}}`)).toBe(2);
    const tokens = (kind: string) => value(`crewd_deployment_tokens_total{${of},model="gpt-4o-mini",kind="${kind}"}`);
    expect([tokens('input'), tokens('output'), tokens('cached_input'), tokens('reasoning')]).toEqual([
      2000, 1000, 400, 200,
    ]);
    // 2 × (800 × 0.15 + 200 × 0.075 + 500 × 0.6) / 1e6
    expect(value(`crewd_deployment_cost_usd_total{${of},model="gpt-4o-mini"}`)).toBeCloseTo(0.00087, 10);
    expect(text).not.toMatch(/run_id|run_[0-9a-z]{20,}/);
  });
});
