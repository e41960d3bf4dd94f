import type { RawBuilder, Transaction } from 'kysely';
import type { Environment, RunCommand, RunStatus, TerminalRunStatus, ThreadInterrupt } from '../db/columns.js';
import type { VersionSource, VersionStatus } from '../db/schema/builds.js';
import type { Database } from '../db/types.js';
import type { StoredVariable } from '../deployments/variables.js';

export type { RunCommand, RunStatus, TerminalRunStatus, ThreadInterrupt };

/** A thread as its run's runner receives it on standard input. */
export interface ThreadState {
  values: Record<string, unknown> | null;
  /** The latest checkpoint's runner checkpoint; null when none. */
  checkpoint: unknown;
}

/** The types of the final event a run's end stores last (end-recorder.ts `finalEvent`). */
export const FINAL_EVENT_TYPES: readonly string[] = ['run.completed', 'run.failed', 'run.canceled'];

export const isTerminal = (status: RunStatus): status is TerminalRunStatus =>
  status === 'succeeded' || status === 'failed' || status === 'canceled';

/** What a hook sees of a run in the transaction that ends it. */
export interface FinishedRun {
  id: string;
  org_id: string;
  deployment_id: string;
  environment: Environment;
  thread_id: string | null;
  /** The instance that ran its process; null for a run that never started. */
  instance_id?: string | null;
  status: TerminalRunStatus;
  output: Record<string, unknown> | null;
  /** Thread values the runner provided with its result, if any. */
  values: Record<string, unknown> | undefined;
  /** The runner's own checkpoint (undefined when it gave none). */
  checkpoint?: unknown;
  /** What the runner stopped at (run.interrupted); absent or null after run.completed or another end. */
  interrupts?: ThreadInterrupt[] | null;
  error_message: string | null;
  started_at: Date | null;
  completed_at: Date;
}

/** Work a hook leaves for after the ending transaction has committed (sending webhooks, say). */
export type AfterCommit = () => void;

/** What the owner of a run knows of it before its end is written. */
export interface RunIdentity {
  deploymentId: string;
  threadId: string | null;
}

/**
 * A part of a run's end owned by another resource (the thread's state, webhook deliveries),
 * handed to the end recorder at construction. A hook writes in one of two ways: `joinEnd`, as part
 * of the one statement that ends the run; or `inTransaction`, in a transaction around that
 * statement. A run whose hooks all join (or no hook applies to) ends in one statement, without a
 * transaction, whose BEGIN and COMMIT would cost a round trip each before a webhook's delivery can be sent.
 */
export interface RunEndHook {
  /** Whether the hook has work for a run like this; without it the hook applies to every run. */
  applies?(run: RunIdentity): boolean | Promise<boolean>;
  /** Runs first in the ending transaction, before the run's row is touched (to take locks in a fixed order). */
  beforeEnd?(trx: Transaction<Database>, runId: string): Promise<void>;
  /** The hook's writes as part of the statement that ends the run. Null: nothing to write for this end. */
  joinEnd?(run: EndingRun): JoinedEnd | null;
  /** Runs in the ending transaction, after the statement that ends the run; what it returns runs after the commit. */
  inTransaction?(trx: Transaction<Database>, run: FinishedRun): Promise<AfterCommit | undefined>;
}

/** What an end will write, known before it is written. */
export interface EndingRun {
  id: string;
  status: TerminalRunStatus;
  output: Record<string, unknown> | null;
  error_message: string | null;
}

/** A hook's part of the statement that ends a run. */
export interface JoinedEnd {
  /**
   * Common table expressions added to that statement, in order, named uniquely for the hook; they
   * may read `ended`, the run's row as ended (no row when the run had ended already).
   */
  ctes: ReadonlyArray<readonly [name: string, query: RawBuilder<unknown>]>;
  /** A scalar subquery over them; its value is given to `committed`. */
  result: RawBuilder<unknown>;
  /** Once the statement has committed: what follows, as inTransaction's return. */
  committed(result: unknown, run: FinishedRun): AfterCommit | undefined;
}

/** What a new run does when its thread is busy (CONTRACTS §10). */
export type MultitaskStrategy = 'reject' | 'enqueue' | 'interrupt' | 'rollback';

/** How a new run stands in its thread, decided in its creating transaction. */
export interface ThreadTurn {
  /** The run holds the thread (busy with it); otherwise it waits in the thread's queue. */
  holds: boolean;
  /** It may start as soon as a slot is free: it holds the thread and no displaced run's process may still be alive. */
  startable: boolean;
  /** What its runner starts from, when it starts now. */
  state: ThreadState;
  /** The run it displaced (interrupt, rollback), to be canceled in the same transaction. */
  displaced: { id: string; status: 'pending' | 'running' } | null;
}

/**
 * How a run in a thread takes its thread, inside the creating transaction, by its multitask
 * strategy: holds it, queues behind its run, or displaces that run; or throws 404/400/409.
 */
export type ThreadGate = (
  trx: Transaction<Database>,
  claim: {
    orgId: string;
    threadId: string;
    deploymentId: string;
    runId: string;
    command: boolean;
    strategy: MultitaskStrategy;
  },
) => Promise<ThreadTurn>;

/** What a runner is started with. */
export interface LaunchSpec {
  run: {
    id: string;
    org_id: string;
    deployment_id: string;
    version_id: string;
    thread_id: string | null;
    /** Its OpenTelemetry trace (when tracing is on) and the caller's span over it (src/telemetry). */
    trace_id?: string | null;
    trace_parent_id?: string | null;
  };
  input: Record<string, unknown>;
  version: {
    command: string[];
    cwd: string | null;
    env: Record<string, string>;
    timeout_seconds: number | null;
    /** A bundle version, or a command version with deployment variables, is prepared before it starts. */
    source: VersionSource;
    status: VersionStatus;
    bundle_sha256: string | null;
    /** The deployment's stored variables as read with the run; null when it has none. */
    variables: StoredVariable[] | null;
  };
  thread: ({ thread_id: string } & ThreadState) | null;
  command: RunCommand | null;
}

export interface CreateRunParams {
  /** The run's id when the caller chooses it (the LangGraph API's runs have UUIDs); else a new `run_…` id. */
  runId?: string;
  orgId: string;
  deploymentId: string;
  environment: Environment;
  input: Record<string, unknown>;
  threadId?: string | null;
  /** The cron starting the run and the due time it starts it for; a second run for the same due time is refused. */
  cron?: { id: string; dueAt: Date } | null;
  /** The caller's W3C `traceparent` header: with tracing on, the run's span is its child. */
  traceparent?: string | null | undefined;
  /** Resumes the interrupted thread (thread runs only). */
  command?: RunCommand | null;
  /** What to do when the thread is busy; default `reject`. */
  multitaskStrategy?: MultitaskStrategy;
  /** Scoped per org + idempotencyScope; same key + same body within 24h answers the first response. */
  idempotencyKey?: string | null;
  /** e.g. 'runs', 'thread:<id>', 'incoming:<webhook id>'. */
  idempotencyScope: string;
}

export interface CreatedRun {
  run_id: string;
  version_id: string;
  version_number: number;
  status: RunStatus;
}
