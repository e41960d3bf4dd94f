import type { RunUsage } from '../db/schema/run-usage.js';
import type { LaunchSpec } from '../run-record/types.js';

/** How a run ended, as its trace tells it. */
export interface TracedEnd {
  status: 'succeeded' | 'failed' | 'canceled';
  error: string | null;
  usage: RunUsage | null;
  /** The values of the run's deployment variables and version env: masked in what the trace says of errors. */
  secrets: readonly string[];
}

/** One run's trace while it runs: its events, with their times, become spans at its end. */
export interface RunTrace {
  event(type: string, data: Record<string, unknown>): void;
  end(outcome: TracedEnd): void;
}

/** Makes runs' traces (src/telemetry/run-tracer.ts, loaded only when tracing is configured). */
export interface RunTracer {
  /** A trace for a run that has a trace id; null when it has none (created while tracing was off). */
  start(spec: LaunchSpec): RunTrace | null;
  /** Sends what is still buffered; the service's shutdown waits for it. */
  shutdown(): Promise<void>;
}
