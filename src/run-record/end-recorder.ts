import type { Kysely, Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { RunUsage } from '../db/schema/run-usage.js';
import { refusedAsData } from '../db/sqlstate.js';
import type { Database } from '../db/types.js';
import type { LocalEventBus } from '../events/bus.js';
import type { LiveEvent, RunEnd } from '../events/types.js';
import type { Signals } from '../signals/hub.js';
import { endRunWithEvent } from './end-statement.js';
import type { RunObserver } from './observer.js';
import * as repo from './repository.js';
import {
  type AfterCommit,
  type EndingRun,
  type FinishedRun,
  isTerminal,
  type RunEndHook,
  type RunIdentity,
  type RunStatus,
  type TerminalRunStatus,
  type ThreadInterrupt,
} from './types.js';

export interface RunOutcome {
  status: TerminalRunStatus;
  output: Record<string, unknown> | null;
  /** Thread values the runner gave with its result. */
  values?: Record<string, unknown> | undefined;
  /** The runner's own checkpoint, stored with the thread's. */
  checkpoint?: unknown;
  /** Set when the runner stopped at interrupts (run.interrupted). */
  interrupts?: ThreadInterrupt[] | null;
  error: string | null;
  /** The run's LLM usage as its owner summed it; undefined leaves the stored usage as it is. */
  usage?: RunUsage | undefined;
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

export interface EndedRun {
  run: NonNullable<Awaited<ReturnType<typeof endRunWithEvent>>>;
  end: RunEnd;
  /**
   * The final event as stored, with its sequence number; null only were its number taken, which no end allows: an
   * owner's (or a handed-over log's) number is after every one its log gave, and 'next' is counted under the lock.
   */
  event: { seq: number; json: string } | null;
}

/** The final event for live streams; without a stored event, only the end (streams then just complete). */
function liveEnd(ended: EndedRun): LiveEvent {
  return ended.event ? { ...ended.event, end: ended.end } : { seq: 0, json: '', end: ended.end };
}

/** An end the database could not take (it was down): kept and written on a later try. */
interface UnrecordedEnd {
  outcome: RunOutcome;
  nextSeq: number;
  unstored: readonly repo.EventRow[];
}

/**
 * How the end of a run this instance ran went: written; lost to an end written first (another
 * instance's cancel, say); or kept to be written on a later tick (the database is away).
 */
export type OwnEnd = 'recorded' | 'lost' | 'kept';

/** How one end is asked for: the run, the statuses it may end from, and what the caller knows. */
export interface EndRequest {
  runId: string;
  from: readonly RunStatus[];
  outcome: RunOutcome;
  /**
   * The final event's number when the caller has the run's events (its owner, or an end its owner's
   * log was handed over to), else 'next': the next free one, after every event its owner's log stored.
   */
  seq: number | 'next';
  /** The owner's events not stored yet, stored with the end. */
  unstored?: readonly repo.EventRow[];
  /** The owner's knowledge of the run, so that hooks which do not apply are skipped. */
  identity?: RunIdentity;
}

/** A hook that writes outside the ending statement, or locks before it, needs a transaction around it. */
const needsTransaction = (hook: RunEndHook) => hook.beforeEnd !== undefined || hook.inTransaction !== undefined;

/**
 * An end numbered 'next' locks the run's row before its statement (`lockRun`), so it needs a transaction: a
 * batch of the owner's log (which share-locks that row) commits before the lock or finds the run ended after
 * it, and the statement, which begins after the lock, counts every stored event.
 */
const locksFirst = (request: EndRequest) => request.seq === 'next';

/**
 * Ends runs, the one place that does: the statement that sets the terminal status and stores the
 * final event also writes the hooks' joined parts (webhook deliveries); a hook that needs a
 * transaction (thread state) gets one around it, so either all of it happens or none. After the
 * commit the hooks' follow-ups run and the end is published to live streams.
 */
export function createEndRecorder(options: {
  db: Kysely<Database>;
  bus: LocalEventBus;
  logger: Logger;
  hooks: readonly RunEndHook[];
  /** `ended` is emitted once an end has committed, before it is published. */
  signals: Signals;
  observer?: RunObserver | undefined;
}) {
  const { db, bus, logger, hooks } = options;
  const unrecorded = new Map<string, UnrecordedEnd>();

  async function hooksFor(identity: RunIdentity | undefined): Promise<RunEndHook[]> {
    if (!identity) return [...hooks];
    const applying: RunEndHook[] = [];
    for (const hook of hooks) if (!hook.applies || (await hook.applies(identity))) applying.push(hook);
    return applying;
  }

  /**
   * Ends the run through `executor`, which is a transaction when a hook needs one (`needsTransaction`):
   * the hooks' `joinEnd` parts go in the ending statement, then their `inTransaction` writes follow it.
   */
  async function endWith(
    executor: Kysely<Database> | Transaction<Database>,
    applying: readonly RunEndHook[],
    request: EndRequest,
    afterCommit: AfterCommit[],
  ): Promise<EndedRun | null> {
    const { outcome } = request;
    const ending: EndingRun = {
      id: request.runId,
      status: outcome.status,
      output: outcome.status === 'succeeded' ? (outcome.output ?? {}) : null,
      error_message: outcome.status === 'failed' ? (outcome.error ?? 'Run failed') : null,
    };
    const { output, error_message } = ending;
    const event = finalEvent(outcome);
    // Only a hook that needs a transaction, or an end that locks first, is given it, and then `executor` is one.
    const trx = executor as Transaction<Database>;
    for (const hook of applying) await hook.beforeEnd?.(trx, request.runId);
    // Threads before runs: the hooks' locks come first.
    if (locksFirst(request)) await repo.lockRun(trx, request.runId);
    const joined = applying.flatMap((hook) => hook.joinEnd?.(ending) ?? []);
    const run = await endRunWithEvent(
      executor,
      request.runId,
      request.from,
      { status: outcome.status, output, error_message, usage: outcome.usage },
      { seq: request.seq, type: event.type, data: event.data },
      request.unstored ?? [],
      joined,
    );
    if (!run) return null;
    const finished: FinishedRun = {
      id: run.id,
      org_id: run.org_id,
      deployment_id: run.deployment_id,
      environment: run.environment,
      thread_id: run.thread_id,
      instance_id: run.instance_id,
      status: outcome.status,
      output,
      values: outcome.status === 'succeeded' ? outcome.values : undefined,
      checkpoint: outcome.status === 'succeeded' ? outcome.checkpoint : undefined,
      interrupts: outcome.status === 'succeeded' ? (outcome.interrupts ?? null) : null,
      error_message,
      started_at: run.started_at,
      completed_at: run.completed_at ?? new Date(),
    };
    for (const hook of applying) {
      const followUp = await hook.inTransaction?.(trx, finished);
      if (followUp) afterCommit.push(followUp);
    }
    joined.forEach((part, i) => {
      const followUp = part.committed(run.joined[i], finished);
      if (followUp) afterCommit.push(followUp);
    });
    const stored = run.event_seq === null ? null : { seq: run.event_seq, json: JSON.stringify(event) };
    return { run, end: { status: outcome.status, output, error: error_message }, event: stored };
  }

  /** What follows a committed end: the hooks' follow-ups, then the end published to live streams. */
  function committed(request: EndRequest, ended: EndedRun, afterCommit: readonly AfterCommit[]): void {
    options.signals.emit('ended', { runId: request.runId });
    for (const followUp of afterCommit) followUp();
    options.observer?.runFinished?.(ended.end.status);
    options.observer?.runEnded?.(ended.run);
    bus.publish(request.runId, liveEnd(ended));
  }

  /**
   * Ends the run if it is still in one of `from`; null when something else ended it first.
   * A failing attempt is retried a few times, since giving up would leave the run unfinished.
   */
  async function end(request: EndRequest): Promise<EndedRun | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        const applying = await hooksFor(request.identity);
        const afterCommit: AfterCommit[] = [];
        const ended =
          applying.some(needsTransaction) || locksFirst(request)
            ? await db.transaction().execute((trx) => endWith(trx, applying, request, afterCommit))
            : await endWith(db, applying, request, afterCommit);
        if (!ended) return null;
        committed(request, ended, afterCommit);
        return ended;
      } catch (error) {
        if (attempt >= 3 || refusedAsData(error)) throw error;
        logger.warn({ err: error, runId: request.runId, attempt }, 'ending run failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      }
    }
  }

  /**
   * Records the end of a run this instance ran. One the database cannot write now is kept for
   * `retryUnrecorded`. One it refuses as data (protocol.ts makes the known cases storable) would
   * never be written, so the run fails instead, without the runner's unstored events and result.
   */
  async function recordOwnEnd(request: EndRequest & { seq: number }, refusedBefore = false): Promise<OwnEnd> {
    try {
      return (await end(request)) === null ? 'lost' : 'recorded';
    } catch (error) {
      if (!refusedBefore && refusedAsData(error)) {
        logger.error({ err: error, runId: request.runId }, 'the database refused the end of a run; failing it');
        const reason = error instanceof Error ? error.message : String(error);
        const failed: RunOutcome = {
          status: 'failed',
          output: null,
          error: `Run output could not be stored: ${reason}`,
        };
        const started = (request.unstored ?? []).filter((event) => event.type === 'run.started');
        return recordOwnEnd({ ...request, outcome: failed, unstored: started }, true);
      }
      logger.error({ err: error, runId: request.runId }, 'could not record the end of a run; retrying later');
      unrecorded.set(request.runId, {
        outcome: request.outcome,
        nextSeq: request.seq,
        unstored: request.unstored ?? [],
      });
      return 'kept';
    }
  }

  /** Writes the ends kept while the database was away; a run another instance ended meanwhile is let go. */
  async function retryUnrecorded(): Promise<void> {
    for (const [runId, kept] of unrecorded) {
      const ended = await end({
        runId,
        from: ['running'],
        outcome: kept.outcome,
        seq: kept.nextSeq,
        unstored: kept.unstored,
      });
      unrecorded.delete(runId);
      if (ended) logger.info({ runId }, 'end of a run recorded after a retry');
    }
  }

  /**
   * Ends a run inside the caller's transaction (a run another one displaces, the queue of a thread
   * being deleted); the caller runs `afterCommit` once that transaction has committed. Without
   * hooks, neither the thread nor webhooks hear of it (a run about to be deleted).
   */
  async function endWithin(
    trx: Transaction<Database>,
    request: EndRequest,
    options: { hooks: boolean } = { hooks: true },
  ): Promise<{ ended: EndedRun | null; afterCommit: () => void }> {
    const applying = options.hooks ? await hooksFor(request.identity) : [];
    const followUps: AfterCommit[] = [];
    const ended = await endWith(trx, applying, request, followUps);
    return { ended, afterCommit: () => ended && committed(request, ended, followUps) };
  }

  /**
   * Publishes to this instance's streams of a run the end another instance committed, as that instance announced
   * it (`remote`: they read what they lack from the store), for the streams that subscribed after its announcement
   * while this instance still held the run as its own. Not announced to the other instances again.
   */
  async function relayEndedElsewhere(runId: string): Promise<void> {
    const [run, final] = await Promise.all([repo.findRunById(db, runId), repo.storedFinalEvent(db, runId)]);
    if (!run || !isTerminal(run.status)) return;
    bus.publish(runId, { seq: final?.seq ?? 0, json: final?.json ?? '', end: repo.endOfRun(run), remote: true });
  }

  return { end, endWithin, recordOwnEnd, retryUnrecorded, relayEndedElsewhere };
}

export type EndRecorder = ReturnType<typeof createEndRecorder>;
