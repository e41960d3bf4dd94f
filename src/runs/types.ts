import type { Transaction } from 'kysely';
import type { Database, Environment } from '../db/types.js';

export type RunStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'canceled';
export type TerminalRunStatus = 'succeeded' | 'failed' | 'canceled';

export const isTerminal = (status: RunStatus): status is TerminalRunStatus =>
  status === 'succeeded' || status === 'failed' || status === 'canceled';

/** What a hook sees of a run in the transaction that ends it. */
export interface FinishedRun {
  id: string;
  org_id: string;
  deployment_id: string;
  environment: Environment;
  thread_id: string | null;
  status: TerminalRunStatus;
  output: Record<string, unknown> | null;
  /** Thread values the runner provided with its result, if any. */
  values: Record<string, unknown> | undefined;
  error_message: string | null;
  started_at: Date | null;
  completed_at: Date;
}

/** Called inside the one transaction that ends a run, in registration order. */
export type RunFinishedHook = (trx: Transaction<Database>, run: FinishedRun) => Promise<void>;

/** What the owner of a run knows of it before its end is written. */
export interface RunIdentity {
  deploymentId: string;
  threadId: string | null;
}

/**
 * Whether a hook has work for a run like this; a run no hook applies to ends in one statement,
 * without a transaction. A hook without one applies to every run.
 */
export type HookApplies = (run: RunIdentity) => boolean | Promise<boolean>;

export interface CreateRunParams {
  orgId: string;
  deploymentId: string;
  environment: Environment;
  input: Record<string, unknown>;
  threadId?: string | null;
  /** The cron starting the run and the due time it starts it for; a second run for the same due time is refused. */
  cron?: { id: string; dueAt: Date } | null;
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
