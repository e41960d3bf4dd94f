import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILT_IN_PRICES, costOf, loadPriceFile, priceFor, priceTable } from '../../src/telemetry/prices.js';
import { parseLlmCall, UsageTally } from '../../src/telemetry/usage.js';

const priceFile = (content: string) => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'crewd-prices-')), 'prices.json');
  writeFileSync(file, content);
  return file;
};

describe('model prices', () => {
  it('match by exact name, then by the longest listed prefix, with or without a provider before a slash', () => {
    const prices = priceTable();
    expect(priceFor(prices, 'gpt-4o-mini')).toBe(BUILT_IN_PRICES['gpt-4o-mini']);
    expect(priceFor(prices, 'gpt-4o-mini-2024-07-18')).toBe(BUILT_IN_PRICES['gpt-4o-mini']);
    expect(priceFor(prices, 'gpt-4o-2024-08-06')).toBe(BUILT_IN_PRICES['gpt-4o']);
    expect(priceFor(prices, 'openai/gpt-4o')).toBe(BUILT_IN_PRICES['gpt-4o']);
    expect(priceFor(prices, 'anthropic/claude-3-5-haiku-20241022')).toBe(BUILT_IN_PRICES['claude-3-5-haiku']);
    expect(priceFor(prices, 'models/gemini-2.5-flash-lite')).toBe(BUILT_IN_PRICES['gemini-2.5-flash-lite']);
    expect(priceFor(prices, 'llama-3-70b')).toBeUndefined();
    for (const price of Object.values(BUILT_IN_PRICES)) expect(price.as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('price cached input at its own rate, or the input rate when it has none; reasoning is output', () => {
    const tokens = { input_tokens: 1000, cached_input_tokens: 200, output_tokens: 500 };
    expect(costOf({ input: 0.15, cached_input: 0.075, output: 0.6 }, tokens)).toBeCloseTo(435e-6, 15);
    expect(costOf({ input: 0.15, output: 0.6 }, tokens)).toBeCloseTo(450e-6, 15);
  });

  it('take an operator file over the built-in table, and name what in it is wrong', async () => {
    const file = priceFile(JSON.stringify({ 'gpt-4o': { input: 1, output: 2 }, house: { input: 3, output: 4 } }));
    const prices = priceTable(await loadPriceFile(file));
    expect(priceFor(prices, 'gpt-4o')).toEqual({ input: 1, output: 2 });
    expect(priceFor(prices, 'house-7b')).toEqual({ input: 3, output: 4 });
    await expect(loadPriceFile(priceFile('{"m": {"input": -1, "output": 1}}'))).rejects.toThrow(
      /MODEL_PRICES_FILE .*prices\.json: m\.input must not be negative/,
    );
    await expect(loadPriceFile(priceFile('{"m": {"input": 1}}'))).rejects.toThrow(/m\.output/);
    await expect(loadPriceFile(priceFile('not json'))).rejects.toThrow(/is not JSON/);
    await expect(loadPriceFile('/nonexistent/prices.json')).rejects.toThrow(/cannot be read/);
  });
});

describe('a run’s usage', () => {
  it('sums calls by model; an unpriced model has no cost and is listed, and the run’s cost is the priced part', () => {
    const tally = new UsageTally();
    const calls = [
      {
        model: 'gpt-4o-mini',
        usage: { input_tokens: 1000, cached_input_tokens: 200, output_tokens: 500, reasoning_tokens: 100 },
      },
      { model: 'gpt-4o-mini', usage: { input_tokens: 2000, output_tokens: 1000, total_tokens: 3000 } },
      { model: 'mystery', usage: { input_tokens: 10, output_tokens: 5 } },
      { model: 'mystery' },
      { model: 'mystery', usage: { input_tokens: -1, output_tokens: 5 } },
    ];
    for (const data of calls) {
      const call = parseLlmCall(data);
      if (call) tally.add(call);
    }
    expect(parseLlmCall({ usage: { input_tokens: 1, output_tokens: 1 } })).toBeNull();
    expect(tally.usage(priceTable())).toEqual({
      input_tokens: 3010,
      output_tokens: 1505,
      cached_input_tokens: 200,
      reasoning_tokens: 100,
      total_tokens: 4515,
      calls: 5,
      cost: 0.001335,
      unpriced_models: ['mystery'],
      by_model: {
        'gpt-4o-mini': {
          input_tokens: 3000,
          output_tokens: 1500,
          cached_input_tokens: 200,
          reasoning_tokens: 100,
          total_tokens: 4500,
          calls: 2,
          cost: 0.001335,
        },
        mystery: {
          input_tokens: 10,
          output_tokens: 5,
          cached_input_tokens: 0,
          reasoning_tokens: 0,
          total_tokens: 15,
          calls: 3,
          cost: null,
        },
      },
    });
    expect(new UsageTally().usage(priceTable())).toBeNull();
  });
});
