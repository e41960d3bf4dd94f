import type { RunUsage } from '../db/schema/run-usage.js';
import type { TerminalRunStatus } from './types.js';

/** What a run's end tells the per-deployment metrics. */
export interface EndedRunFacts {
  deployment_id: string;
  status: string;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  usage: RunUsage | null;
}

/** What runs and streams report for metrics; every member optional, so tests need none. */
export interface RunObserver {
  runStarted?(): void;
  runFinished?(status: TerminalRunStatus): void;
  /** A run's end committed, with its row as it ended (per-deployment metrics: src/telemetry/run-metrics.ts). */
  runEnded?(run: EndedRunFacts): void;
  /** Events written to event-stream clients since the last report (reported in batches). */
  eventsRelayed?(count: number): void;
  streamOpened?(): void;
  streamClosed?(): void;
}
