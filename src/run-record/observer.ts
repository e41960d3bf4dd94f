import type { TerminalRunStatus } from './types.js';

/** What runs and streams report for metrics; every member optional, so tests need none. */
export interface RunObserver {
  runStarted?(): void;
  runFinished?(status: TerminalRunStatus): void;
  /** Events written to event-stream clients since the last report (reported in batches). */
  eventsRelayed?(count: number): void;
  streamOpened?(): void;
  streamClosed?(): void;
}
