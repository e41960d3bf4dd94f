import { z } from 'zod';

const tokens = z.number().int();

export const tokenCounts = {
  input_tokens: tokens.describe('all input, cached input included'),
  output_tokens: tokens.describe('all output, reasoning included'),
  cached_input_tokens: tokens,
  reasoning_tokens: tokens,
  total_tokens: tokens,
  calls: tokens.describe('LLM calls reported'),
};

export const modelUsageSchema = z
  .object({ ...tokenCounts, cost: z.number().nullable().describe('USD; null when the model has no price') })
  .meta({ id: 'ModelUsage' });

export const runUsageSchema = z
  .object({
    ...tokenCounts,
    cost: z.number().nullable().describe('USD over the priced models; null when none is priced'),
    unpriced_models: z.array(z.string()).describe('models without a price: their tokens are not in `cost`'),
    by_model: z.record(z.string(), modelUsageSchema),
  })
  .meta({ id: 'RunUsage' });
