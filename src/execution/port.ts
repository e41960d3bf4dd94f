import type { LaunchSpec, RunStatus } from '../run-record/types.js';
import type { Signals } from '../signals/hub.js';
import type { ActiveRuns } from './active-runs.js';
import type { HandedOver } from './event-log.js';
import type { RunQueue } from './run-queue.js';

/** Where a new run stands once it asked for a slot: its row is written with these. */
export interface Seat {
  status: 'running' | 'pending';
  /** This instance, when it holds a slot for the run (it starts at once); else null. */
  instanceId: string | null;
}

/**
 * What a run's insert answers: the run it wrote, with what its runner starts from and what is
 * left for once its transaction committed (run before the launch); or, when it wrote no run,
 * the answer to give instead (an earlier request's, for an Idempotency-Key seen before).
 */
export type Inserted<T> = { created: T; spec: () => LaunchSpec; committed?: (() => void) | null } | { answer: T };

/** What `admit` answers: the created run and its status once launched (or queued); or the insert's answer. */
export type Admitted<T> = { created: T; status: RunStatus } | { answer: T };

/** How a cancel here went: this cancel ended the run, it ended otherwise, or its process does not run here. */
export type CancelOutcome = 'canceled' | 'ended' | 'not-here';

/**
 * The executor as the APIs over runs see it: admitting a new run, and canceling one. Nothing else
 * of src/execution/ is theirs to call.
 */
export interface RunExecutor {
  /**
   * Admits a new run. `insert` writes the run (in a transaction of its own, retried or not) and,
   * once it knows whether the run may start (a thread run learns it inside its transaction),
   * takes its seat: a slot here when one is free, else `pending`. A slot taken is given back when
   * `insert` throws, writes no run (a replay), or takes a seat again (its transaction retried).
   * Once `insert` resolved (its transaction committed) the run is launched, or queued.
   */
  admit<T>(
    run: { id: string; orgId: string },
    insert: (seat: (startable: boolean) => Seat) => Promise<Inserted<T>>,
  ): Promise<Admitted<T>>;
  /**
   * Cancels a run whose row names this instance; resolves once its end is committed (or kept
   * for a later tick while the database is away). 'not-here' for a run another instance runs,
   * or none does.
   */
  cancel(run: { id: string; instance_id: string | null }): Promise<CancelOutcome>;
  /**
   * For an end made here of a run whose process runs here (a run displacing it from its thread): its
   * event log's unstored events and the number after every one it gave, for that end to store and
   * use; the log numbers, publishes and stores nothing until `release`, which the caller calls with
   * whether its end committed. Null when the run's process does not run here: the end numbers its
   * final event after the stored ones.
   */
  handOver(runId: string): HandedOver | null;
}

/**
 * The port over the run queue and the active runs. Runs admitted here are known by id from the
 * moment they hold a slot until their process is supervised, so a cancel in between waits for
 * their launch instead of looking again later.
 */
export function createRunPort(options: {
  instanceId: string;
  queue: RunQueue;
  activeRuns: ActiveRuns;
  signals: Signals;
}): RunExecutor {
  const { instanceId, queue, activeRuns, signals } = options;
  /** Runs holding a slot here whose launch has not begun: resolved once it has, or once the slot is given back. */
  const launching = new Map<string, Promise<void>>();

  async function admit<T>(
    run: { id: string; orgId: string },
    insert: (seat: (startable: boolean) => Seat) => Promise<Inserted<T>>,
  ): Promise<Admitted<T>> {
    let held = false;
    let startable = false;
    let launched = () => {};
    const giveBack = () => {
      if (!held) return;
      held = false;
      launching.delete(run.id);
      launched();
      queue.release(run.orgId);
    };
    const seat = (mayStart: boolean): Seat => {
      giveBack();
      startable = mayStart;
      held = mayStart && queue.reserve(run.orgId);
      if (!held) return { status: 'pending', instanceId: null };
      launching.set(run.id, new Promise<void>((resolve) => (launched = resolve)));
      return { status: 'running', instanceId };
    };

    let inserted: Inserted<T>;
    try {
      inserted = await insert(seat);
    } catch (error) {
      giveBack();
      throw error;
    }
    if ('answer' in inserted) {
      giveBack();
      return inserted;
    }
    inserted.committed?.();
    if (!held) {
      if (startable) {
        queue.enqueued();
        signals.emit('queued', {});
      }
      return { created: inserted.created, status: 'pending' };
    }
    // The launch registers the run as it begins: from here a cancel finds it among the active runs.
    const status = queue.launch(inserted.spec());
    launching.delete(run.id);
    launched();
    return { created: inserted.created, status: await status };
  }

  return {
    admit,

    handOver: (runId) => activeRuns.handOver(runId),

    async cancel(run) {
      if (run.instance_id !== instanceId) return 'not-here';
      await launching.get(run.id);
      // Claimed by this instance's queue a moment ago: launched once its search for pending runs is done.
      if (!activeRuns.owns(run.id)) await queue.settled();
      return activeRuns.cancel(run.id);
    },
  };
}
