import { readFile } from 'node:fs/promises';
import { z } from 'zod';

/** USD per million tokens. `cached_input` absent: cached input costs as much as other input. */
export interface ModelPrice {
  input: number;
  cached_input?: number | undefined;
  output: number;
  /** When the price was taken from the provider's page (built-in prices only). */
  as_of?: string | undefined;
}

export type PriceTable = ReadonlyMap<string, ModelPrice>;

/** The providers' list prices (standard tier, shortest context band) on the day noted with each. */
const OPENAI = '2025-09-01';
const ANTHROPIC = '2025-09-01';
const GOOGLE = '2025-09-01';

const p = (input: number, cached: number | undefined, output: number, as_of: string): ModelPrice => ({
  input,
  cached_input: cached,
  output,
  as_of,
});

/** Built-in prices; MODEL_PRICES_FILE overrides or adds models. A name matches exactly, else by its longest listed prefix. */
export const BUILT_IN_PRICES: Readonly<Record<string, ModelPrice>> = {
  'gpt-5': p(1.25, 0.125, 10, OPENAI),
  'gpt-5-mini': p(0.25, 0.025, 2, OPENAI),
  'gpt-5-nano': p(0.05, 0.005, 0.4, OPENAI),
  'gpt-4.1': p(2, 0.5, 8, OPENAI),
  'gpt-4.1-mini': p(0.4, 0.1, 1.6, OPENAI),
  'gpt-4.1-nano': p(0.1, 0.025, 0.4, OPENAI),
  'gpt-4o': p(2.5, 1.25, 10, OPENAI),
  'gpt-4o-mini': p(0.15, 0.075, 0.6, OPENAI),
  'gpt-4-turbo': p(10, undefined, 30, OPENAI),
  'gpt-3.5-turbo': p(0.5, undefined, 1.5, OPENAI),
  o1: p(15, 7.5, 60, OPENAI),
  'o1-mini': p(1.1, 0.55, 4.4, OPENAI),
  o3: p(2, 0.5, 8, OPENAI),
  'o3-pro': p(20, undefined, 80, OPENAI),
  'o3-mini': p(1.1, 0.55, 4.4, OPENAI),
  'o4-mini': p(1.1, 0.275, 4.4, OPENAI),
  'claude-opus-4-1': p(15, 1.5, 75, ANTHROPIC),
  'claude-opus-4': p(15, 1.5, 75, ANTHROPIC),
  'claude-sonnet-4-5': p(3, 0.3, 15, ANTHROPIC),
  'claude-sonnet-4': p(3, 0.3, 15, ANTHROPIC),
  'claude-3-7-sonnet': p(3, 0.3, 15, ANTHROPIC),
  'claude-3-5-sonnet': p(3, 0.3, 15, ANTHROPIC),
  'claude-3-5-haiku': p(0.8, 0.08, 4, ANTHROPIC),
  'claude-3-opus': p(15, 1.5, 75, ANTHROPIC),
  'claude-3-haiku': p(0.25, 0.03, 1.25, ANTHROPIC),
  'gemini-2.5-pro': p(1.25, 0.31, 10, GOOGLE),
  'gemini-2.5-flash': p(0.3, 0.075, 2.5, GOOGLE),
  'gemini-2.5-flash-lite': p(0.1, 0.025, 0.4, GOOGLE),
  'gemini-2.0-flash': p(0.1, 0.025, 0.4, GOOGLE),
  'gemini-2.0-flash-lite': p(0.075, undefined, 0.3, GOOGLE),
  'gemini-1.5-pro': p(1.25, 0.3125, 5, GOOGLE),
  'gemini-1.5-flash': p(0.075, 0.01875, 0.3, GOOGLE),
};

const usdPerMillion = z
  .number({ message: 'must be a number (USD per million tokens)' })
  .nonnegative('must not be negative');
const priceFileSchema = z.record(
  z.string().min(1),
  z.strictObject({ input: usdPerMillion, cached_input: usdPerMillion.optional(), output: usdPerMillion }),
);

/** The built-in prices with an operator's over them. */
export function priceTable(overrides: Record<string, ModelPrice> = {}): PriceTable {
  return new Map(Object.entries({ ...BUILT_IN_PRICES, ...overrides }));
}

/** Reads MODEL_PRICES_FILE; an error names the file and what in it is wrong. */
export async function loadPriceFile(file: string): Promise<Record<string, ModelPrice>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(`MODEL_PRICES_FILE ${file} cannot be read: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`MODEL_PRICES_FILE ${file} is not JSON: ${(error as Error).message}`);
  }
  const parsed = priceFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || '(the file)';
    throw new Error(
      `MODEL_PRICES_FILE ${file}: ${where} ${issue?.message ?? 'is invalid'}; ` +
        'expected {"<model>": {"input": <USD per 1M>, "cached_input"?: <USD per 1M>, "output": <USD per 1M>}}',
    );
  }
  return parsed.data;
}

function longestPrefix(prices: PriceTable, name: string): ModelPrice | undefined {
  let best: string | undefined;
  for (const listed of prices.keys()) {
    if (name.startsWith(listed) && (best === undefined || listed.length > best.length)) best = listed;
  }
  return best === undefined ? undefined : prices.get(best);
}

/**
 * A model's price: its exact name, then the longest listed prefix of it (`gpt-4o-2024-08-06` is
 * `gpt-4o`). A name with a provider before a slash (`openai/gpt-4o`, `models/gemini-2.5-pro`)
 * is looked up as it is first, then without that part.
 */
export function priceFor(prices: PriceTable, model: string): ModelPrice | undefined {
  const slash = model.lastIndexOf('/');
  const names = slash >= 0 ? [model, model.slice(slash + 1)] : [model];
  for (const name of names) {
    const exact = prices.get(name);
    if (exact) return exact;
  }
  for (const name of names) {
    const prefixed = longestPrefix(prices, name);
    if (prefixed) return prefixed;
  }
  return undefined;
}

/**
 * USD for these tokens (CONTRACTS §15): input counts all input, cached included, so the cached
 * part is priced at the cached rate and the rest at the input rate; reasoning is part of output.
 */
export function costOf(
  price: ModelPrice,
  tokens: { input_tokens: number; cached_input_tokens: number; output_tokens: number },
): number {
  const cached = Math.min(tokens.cached_input_tokens, tokens.input_tokens);
  const fresh = tokens.input_tokens - cached;
  const usd = fresh * price.input + cached * (price.cached_input ?? price.input) + tokens.output_tokens * price.output;
  return usd / 1e6;
}
