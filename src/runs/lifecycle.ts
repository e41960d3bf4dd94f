import type { Kysely, Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import type { LiveEvent, RunEnd } from '../events/types.js';
import type { RunObserver } from './observer.js';
import * as repo from './repository.js';
import type { FinishedRun, HookApplies, RunFinishedHook, RunIdentity, RunStatus, TerminalRunStatus } from './types.js';

export interface RunOutcome {
  status: TerminalRunStatus;
  output: Record<string, unknown> | null;
  /** Thread values the runner gave with its result. */
  values?: Record<string, unknown> | undefined;
  error: string | null;
}

/** The event a run's end is relayed as (CONTRACTS §6). */
export function finalEvent(outcome: RunOutcome): { type: string; data: Record<string, unknown> } {
  switch (outcome.status) {
    case 'succeeded':
      return { type: 'run.completed', data: { status: 'succeeded', output: outcome.output ?? {} } };
    case 'failed':
      return { type: 'run.failed', data: { status: 'failed', error: outcome.error ?? 'Run failed' } };
    case 'canceled':
      return { type: 'run.canceled', data: { status: 'canceled' } };
  }
}

/** The final event for live streams; without a stored event, only the end (streams then just complete). */
export function liveEnd(ended: EndedRun): LiveEvent {
  return ended.event ? { ...ended.event, end: ended.end } : { seq: 0, json: '', end: ended.end };
}

export interface EndedRun {
  run: repo.RunRecord;
  end: RunEnd;
  /** The final event as stored, with its sequence number; null if its number was taken (ended elsewhere). */
  event: { seq: number; json: string } | null;
}

/**
 * Ends runs: one transaction sets the terminal status, stores the final event and runs every
 * registered hook (thread state, webhook outbox), so either all of it happens or none. When the
 * owner says which run it is and no hook applies to it, the end is one statement instead.
 */
export function createRunLifecycle(db: Kysely<Database>, logger: Logger, observer: RunObserver = {}) {
  const hooks: Array<{ run: RunFinishedHook; applies: HookApplies | undefined }> = [];

  async function anyHookApplies(known: RunIdentity | undefined): Promise<boolean> {
    if (!known) return hooks.length > 0;
    for (const hook of hooks) if (!hook.applies || (await hook.applies(known))) return true;
    return false;
  }

  /** Ends the run through `executor`; with `hooksIn` (the transaction `executor` is), the hooks run too. */
  async function endWith(
    executor: Kysely<Database> | Transaction<Database>,
    hooksIn: Transaction<Database> | null,
    runId: string,
    from: readonly RunStatus[],
    outcome: RunOutcome,
    seq: number | 'next',
    unstored: readonly repo.EventRow[],
  ): Promise<EndedRun | null> {
    const output = outcome.status === 'succeeded' ? (outcome.output ?? {}) : null;
    const error = outcome.status === 'failed' ? (outcome.error ?? 'Run failed') : null;
    const event = finalEvent(outcome);
    const run = await repo.endRunWithEvent(
      executor,
      runId,
      from,
      { status: outcome.status, output, error_message: error },
      { seq, type: event.type, data: event.data },
      unstored,
    );
    if (!run) return null;
    const finished: FinishedRun = {
      id: run.id,
      org_id: run.org_id,
      deployment_id: run.deployment_id,
      environment: run.environment,
      thread_id: run.thread_id,
      status: outcome.status,
      output,
      values: outcome.status === 'succeeded' ? outcome.values : undefined,
      error_message: error,
      started_at: run.started_at,
      completed_at: run.completed_at ?? new Date(),
    };
    if (hooksIn) for (const hook of hooks) await hook.run(hooksIn, finished);
    const stored = run.event_seq === null ? null : { seq: run.event_seq, json: JSON.stringify(event) };
    return { run, end: { status: outcome.status, output, error }, event: stored };
  }

  return {
    onRunFinished(hook: RunFinishedHook, applies?: HookApplies): void {
      hooks.push({ run: hook, applies });
    },

    /**
     * Ends the run if it is still in one of `from`; null when something else ended it first.
     * `seq` is the final event's number when the caller owns the run's events, else the next free one;
     * `unstored` are the owner's events not stored yet, stored with the end; `known`, the owner's
     * knowledge of the run, lets hooks that do not apply be skipped.
     * A failing hook is retried a few times, since giving up would leave the run unfinished.
     */
    async end(
      runId: string,
      from: readonly RunStatus[],
      outcome: RunOutcome,
      seq: number | 'next',
      unstored: readonly repo.EventRow[] = [],
      known?: RunIdentity,
    ): Promise<EndedRun | null> {
      for (let attempt = 1; ; attempt++) {
        try {
          const ended = (await anyHookApplies(known))
            ? await db.transaction().execute((trx) => endWith(trx, trx, runId, from, outcome, seq, unstored))
            : await endWith(db, null, runId, from, outcome, seq, unstored);
          if (ended) observer.runFinished?.(ended.end.status);
          return ended;
        } catch (error) {
          if (attempt >= 3) throw error;
          logger.warn({ err: error, runId, attempt }, 'ending run failed; retrying');
          await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
        }
      }
    },
  };
}

export type RunLifecycle = ReturnType<typeof createRunLifecycle>;
