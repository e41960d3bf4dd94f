import type { TerminalRunStatus } from '../db/columns.js';

/** How a run ended, carried by its final event so streams can send `complete` without a query. */
export interface RunEnd {
  status: TerminalRunStatus;
  output: Record<string, unknown> | null;
  error: string | null;
}

/** How a version's build ended, carried by the build log's final event. */
export interface BuildEnd {
  status: 'ready' | 'failed';
  error: string | null;
}

/** The end of whatever an event stream follows: a run, or a version's build. */
export type StreamEnd = RunEnd | BuildEnd;

/** One event of a run as streams send it: `json` is the `{type, data}` object, serialised once for every client. */
export interface LiveEvent {
  seq: number;
  json: string;
  /** Present on the final event (a run's or a build's). */
  end?: StreamEnd;
  /** The encoded SSE frame as an HTTP chunk, made by the first stream that sends the event and shared by the rest. */
  frame?: Buffer;
  /** Came from another instance: announced once stored, so a gap before it can be read from the store. */
  remote?: boolean;
}

export type LiveListener = (event: LiveEvent) => void;

/** What the feed knows of a run going on right now, so a stream need not read it from the store. */
export interface LiveRunState {
  orgId: string;
  /** The run's recent events, stored or not, in order; may overlap what the store returns. */
  backlog: LiveEvent[];
}

export interface LiveSubscription {
  /** The run as it is going on here, or null when the feed does not run it (read the store). */
  live: LiveRunState | null;
  /** The feed also relays the run's events if another instance runs it (no need to poll). */
  remote?: boolean;
  close(): void;
}

/**
 * Where streams get a run's events live. The in-process bus serves runs of this instance;
 * a PostgreSQL LISTEN/NOTIFY feed can implement the same shape for runs of other instances.
 */
export interface RunEventFeed {
  /** Null when this feed cannot deliver the run's events (streams then fall back to polling). */
  subscribe(runId: string, listener: LiveListener, onRemoteLost?: () => void): LiveSubscription | null;
}
