/** The stored shape of a run's `usage` column, summed by src/telemetry/usage.ts. */

/** Token counts as crewd names them (CONTRACTS §15). */
export interface TokenCounts {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  reasoning_tokens: number;
  total_tokens: number;
}

export interface ModelUsage extends TokenCounts {
  calls: number;
  /** USD; null when the model has no price. */
  cost: number | null;
}

/** A run's `usage` (CONTRACTS §15). */
export interface RunUsage extends TokenCounts {
  calls: number;
  /** USD summed over the priced models; null when none is priced. */
  cost: number | null;
  unpriced_models: string[];
  by_model: Record<string, ModelUsage>;
}
