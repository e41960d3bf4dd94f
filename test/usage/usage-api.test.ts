import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext, startRun, until, waitForRun } from '../runs/helpers.js';

const llm = (model: string, usage?: Record<string, number>) => ({
  type: 'llm.call',
  data: usage ? { model, usage } : { model },
});

const counts = (input: number, output: number, cached = 0, reasoning = 0, calls = 1) => ({
  input_tokens: input,
  output_tokens: output,
  cached_input_tokens: cached,
  reasoning_tokens: reasoning,
  total_tokens: input + output,
  calls,
});

describe('usage and cost of runs (CONTRACTS §15)', () => {
  let ctx: RunContext;
  let first: { deploymentId: string };
  let second: { deploymentId: string };
  let runA: string;
  let runB: string;
  let quiet: string;

  beforeAll(async () => {
    const prices = path.join(mkdtempSync(path.join(tmpdir(), 'crewd-prices-')), 'prices.json');
    writeFileSync(prices, JSON.stringify({ 'house-model': { input: 1, output: 2 } }));
    ctx = await createRunContext({ MODEL_PRICES_FILE: prices });
    first = await deploy(ctx, crew('scripted.mjs'));
    second = await deploy(ctx, crew('scripted.mjs'));
    runA = (
      await startRun(ctx, first.deploymentId, {
        events: [
          llm('gpt-4o-mini', {
            input_tokens: 1000,
            cached_input_tokens: 200,
            output_tokens: 500,
            reasoning_tokens: 100,
          }),
          { type: 'log', data: { message: 'between calls' } },
          llm('gpt-4o-mini', { input_tokens: 2000, output_tokens: 1000 }),
          llm('house-model', { input_tokens: 1_000_000, output_tokens: 500_000 }),
          llm('mystery-llm', { input_tokens: 10, output_tokens: 5 }),
          llm('mystery-llm'),
        ],
      })
    ).run_id;
    runB = (
      await startRun(ctx, second.deploymentId, {
        events: [llm('gpt-4o-mini', { input_tokens: 100, output_tokens: 100 })],
      })
    ).run_id;
    // A run without LLM calls has no usage, and the organization's sums leave it out.
    quiet = (await startRun(ctx, first.deploymentId, { events: [{ type: 'log', data: { message: 'no calls' } }] }))
      .run_id;
    await waitForRun(ctx, runA);
    await waitForRun(ctx, runB);
    await waitForRun(ctx, quiet);
  });
  afterAll(() => ctx?.close());

  it('sums a run’s calls by model, prices them, and lists the models without a price', async () => {
    const run = (await ctx.call('GET', `/v1/runs/${runA}`)).json();
    expect(run.status).toBe('succeeded');
    expect(run.trace_id).toBeNull();
    expect(run.usage).toEqual({
      ...counts(1_003_010, 501_505, 200, 100, 5),
      cost: 2.001335,
      unpriced_models: ['mystery-llm'],
      by_model: {
        'gpt-4o-mini': { ...counts(3000, 1500, 200, 100, 2), cost: 0.001335 },
        'house-model': { ...counts(1_000_000, 500_000), cost: 2 },
        'mystery-llm': { ...counts(10, 5, 0, 0, 2), cost: null },
      },
    });
  });

  it('shows usage in run lists, and `fields` narrows each run to what it names', async () => {
    const full = (await ctx.call('GET', `/v1/runs?deployment_id=${second.deploymentId}`)).json();
    expect(full.runs[0].usage.cost).toBe(0.000075);
    expect(full.runs[0].input).toBeDefined();
    const light = await ctx.call('GET', '/v1/runs?fields=status,usage');
    expect(light.statusCode).toBe(200);
    for (const run of light.json().runs) expect(Object.keys(run).sort()).toEqual(['id', 'status', 'usage']);
    const bare = (await ctx.call('GET', '/v1/runs?fields=status')).json();
    expect(Object.keys(bare.runs[0]).sort()).toEqual(['id', 'status']);
    const wrong = await ctx.call('GET', '/v1/runs?fields=status,price');
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().error.message).toContain('must be run fields separated by commas');
  });

  it('sums the organization’s usage by model, deployment and day', async () => {
    expect((await ctx.call('GET', `/v1/runs/${quiet}`)).json().usage).toBeNull();
    const byModel = (await ctx.call('GET', '/v1/usage?group_by=model')).json().usage;
    expect(byModel).toEqual([
      { key: 'gpt-4o-mini', ...counts(3100, 1600, 200, 100, 3), runs: 2, cost: 0.00141 },
      { key: 'house-model', ...counts(1_000_000, 500_000), runs: 1, cost: 2 },
      { key: 'mystery-llm', ...counts(10, 5, 0, 0, 2), runs: 1, cost: null },
    ]);
    const byDeployment = (await ctx.call('GET', '/v1/usage?group_by=deployment')).json().usage;
    expect(byDeployment).toHaveLength(2);
    expect(byDeployment.find((row: { key: string }) => row.key === first.deploymentId)).toEqual({
      key: first.deploymentId,
      ...counts(1_003_010, 501_505, 200, 100, 5),
      runs: 1,
      cost: 2.001335,
    });
    const days = [runA, runB].map(async (id) =>
      (await ctx.call('GET', `/v1/runs/${id}`)).json().created_at.slice(0, 10),
    );
    const [dayA, dayB] = await Promise.all(days);
    const byDay = (await ctx.call('GET', '/v1/usage')).json();
    // The two runs start a moment apart: on one UTC day, unless midnight fell between them.
    if (dayA === dayB) {
      expect(byDay.usage).toEqual([{ key: dayA, ...counts(1_003_110, 501_605, 200, 100, 6), runs: 2, cost: 2.00141 }]);
    } else {
      expect(byDay.usage.map((row: { key: string }) => row.key)).toEqual([dayA, dayB]);
    }
    const one = (await ctx.call('GET', `/v1/usage?group_by=model&deployment_id=${second.deploymentId}`)).json();
    expect(one.usage).toEqual([{ key: 'gpt-4o-mini', ...counts(100, 100), runs: 1, cost: 0.000075 }]);
    const before = (await ctx.call('GET', '/v1/usage?to=2020-01-01T00:00:00Z&from=2019-01-01T00:00:00Z')).json();
    expect(before.usage).toEqual([]);
  });

  it('refuses a grouping or time it does not know, and another organization sees none of it', async () => {
    const week = await ctx.call('GET', '/v1/usage?group_by=week');
    expect(week.statusCode).toBe(400);
    expect(week.json().error.message).toContain('must be day, deployment or model');
    expect((await ctx.call('GET', '/v1/usage?from=yesterday')).statusCode).toBe(400);
    const reversed = await ctx.call('GET', '/v1/usage?from=2024-02-01T00:00:00Z&to=2024-01-01T00:00:00Z');
    expect(reversed.statusCode).toBe(400);
    const org = await ctx.call('POST', '/v1/organizations', { body: { name: 'other' } });
    const key = org.json().api_key.key as string;
    expect((await ctx.call('GET', '/v1/usage?group_by=model', { key })).json().usage).toEqual([]);
  });

  it('stores a running run’s usage as its calls arrive, and keeps it when the run is canceled', async () => {
    const { run_id } = await startRun(ctx, first.deploymentId, {
      events: [llm('gpt-4o-mini', { input_tokens: 40, output_tokens: 2 })],
      hold: true,
    });
    const running = await until(async () => {
      const run = (await ctx.call('GET', `/v1/runs/${run_id}`)).json();
      return run.usage ? run : null;
    });
    expect(running.status).toBe('running');
    expect(running.usage.input_tokens).toBe(40);
    expect((await ctx.call('POST', `/v1/runs/${run_id}/cancel`)).statusCode).toBe(200);
    const canceled = (await ctx.call('GET', `/v1/runs/${run_id}`)).json();
    expect(canceled.status).toBe('canceled');
    expect(canceled.usage.by_model['gpt-4o-mini'].calls).toBe(1);
  });
});
