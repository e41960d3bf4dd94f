import type { RunUsage, TokenCounts } from '../db/schema/run-usage.js';
import { costOf, type PriceTable, priceFor } from './prices.js';

/** One `llm.call` event's meaning: the model, and its usage when the runner reported it. */
export interface LlmCall {
  model: string;
  provider: string | null;
  usage: TokenCounts | null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/** The counts of a `usage` object, or null when it is not one (a count missing, negative or not whole). */
function parseCounts(usage: Record<string, unknown>): TokenCounts | null {
  const { input_tokens, output_tokens, cached_input_tokens = 0, reasoning_tokens = 0, total_tokens } = usage;
  if (!isCount(input_tokens) || !isCount(output_tokens)) return null;
  if (!isCount(cached_input_tokens) || !isCount(reasoning_tokens)) return null;
  if (total_tokens !== undefined && !isCount(total_tokens)) return null;
  return {
    input_tokens,
    output_tokens,
    cached_input_tokens,
    reasoning_tokens,
    total_tokens: total_tokens ?? input_tokens + output_tokens,
  };
}

/**
 * An `llm.call` event's data as a call, or null when it names no model. A `usage` that is not
 * well formed counts the call without tokens, rather than guessing at them.
 */
export function parseLlmCall(data: Record<string, unknown>): LlmCall | null {
  const { model, provider, usage } = data;
  if (typeof model !== 'string' || model === '') return null;
  return {
    model,
    provider: typeof provider === 'string' && provider !== '' ? provider : null,
    usage: isObject(usage) ? parseCounts(usage) : null,
  };
}

const COUNT_KEYS = [
  'input_tokens',
  'output_tokens',
  'cached_input_tokens',
  'reasoning_tokens',
  'total_tokens',
] as const;

const emptyCounts = (): TokenCounts & { calls: number } => ({
  input_tokens: 0,
  output_tokens: 0,
  cached_input_tokens: 0,
  reasoning_tokens: 0,
  total_tokens: 0,
  calls: 0,
});

/** Costs are kept to a millionth of a cent, so sums do not show floating-point dust. */
export const roundUsd = (usd: number) => Math.round(usd * 1e8) / 1e8;

/** A run's LLM calls summed by model, as they arrive. */
export class UsageTally {
  private readonly models = new Map<string, TokenCounts & { calls: number }>();
  /** Calls added since the last `takeChanged`. */
  private changed = false;

  get empty(): boolean {
    return this.models.size === 0;
  }

  add(call: LlmCall): void {
    let sum = this.models.get(call.model);
    if (!sum) {
      sum = emptyCounts();
      this.models.set(call.model, sum);
    }
    sum.calls++;
    if (call.usage) for (const key of COUNT_KEYS) sum[key] += call.usage[key];
    this.changed = true;
  }

  /** Whether calls arrived since the last time this was asked. */
  takeChanged(): boolean {
    const changed = this.changed;
    this.changed = false;
    return changed;
  }

  /** The sum with its cost; null before any call. */
  usage(prices: PriceTable): RunUsage | null {
    if (this.models.size === 0) return null;
    const total: RunUsage = { ...emptyCounts(), cost: null, unpriced_models: [], by_model: {} };
    for (const [model, sum] of [...this.models].sort(([a], [b]) => a.localeCompare(b))) {
      const price = priceFor(prices, model);
      const cost = price ? roundUsd(costOf(price, sum)) : null;
      total.by_model[model] = { ...sum, cost };
      for (const key of COUNT_KEYS) total[key] += sum[key];
      total.calls += sum.calls;
      if (cost === null) total.unpriced_models.push(model);
      else total.cost = roundUsd((total.cost ?? 0) + cost);
    }
    return total;
  }
}
