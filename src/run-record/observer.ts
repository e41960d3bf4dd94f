import type { EndedRunFacts } from '../telemetry/run-metrics.js';
import type { TerminalRunStatus } from './types.js';

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
