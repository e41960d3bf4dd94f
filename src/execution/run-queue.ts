import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import * as repo from '../runs/repository.js';
import type { LaunchSpec, RunStatus, ThreadState } from '../runs/types.js';
import type { ActiveRuns } from './active-runs.js';
import { Slots } from './slots.js';
import type { WakeUps } from './wake-ups.js';

/** Reads a thread's values and latest checkpoint for a queued run that starts later. */
export type ThreadStateLoader = (threadId: string) => Promise<ThreadState>;

/**
 * Slots and pending runs: a new run takes a free slot at once unless queued runs come first;
 * queued runs (this instance's or any other's) start oldest first as slots free up.
 */
export function createRunQueue(options: {
  db: Kysely<Database>;
  instanceId: string;
  maxConcurrentRuns: number;
  activeRuns: ActiveRuns;
  loadThreadState: ThreadStateLoader;
  wakeUps?: WakeUps | undefined;
  logger: Logger;
}) {
  const { db, activeRuns, logger } = options;
  const slots = new Slots(options.maxConcurrentRuns);
  const state = {
    /** Taking runs: from the first successful contact with the database until shutdown. */
    open: false,
    /** Pending runs may exist, so new runs queue behind them rather than jump ahead. */
    pendingMayExist: true,
    /** Runs queued here, counted, so a search for pending runs knows whether one came in meanwhile. */
    queuedHere: 0,
    /** A search for pending runs is under way; `again` asks it for one more round. */
    pump: { running: false, again: false },
  };

  function slotFreed(): void {
    slots.release();
    // Only runs queued here are looked for at once; runs other instances queued wait for the tick.
    if (state.pendingMayExist) pump();
  }

  const launch = (spec: LaunchSpec): Promise<RunStatus> => activeRuns.launch(spec, slotFreed);

  /** Starts queued runs, oldest first, while slots are free. */
  function pump(): void {
    if (!state.open) return;
    if (state.pump.running) {
      state.pump.again = true;
      return;
    }
    state.pump.running = true;
    startPending()
      .catch((error: unknown) => logger.error({ err: error }, 'starting queued runs failed'))
      .finally(() => {
        state.pump.running = false;
      });
  }

  async function startPending(): Promise<void> {
    do {
      state.pump.again = false;
      while (state.open && slots.tryTake()) {
        const queuedBefore = state.queuedHere;
        let claimed: LaunchSpec | null;
        try {
          claimed = await claimNext();
        } catch (error) {
          slots.release();
          throw error;
        }
        if (!claimed) {
          slots.release();
          // Only if no run was queued meanwhile (this search may have missed it).
          if (state.queuedHere === queuedBefore) state.pendingMayExist = false;
          break;
        }
        // There may be more: look again when a slot frees, and let new runs queue behind them.
        state.pendingMayExist = true;
        void launch(claimed);
      }
    } while (state.pump.again && state.open);
  }

  async function claimNext(): Promise<LaunchSpec | null> {
    for (;;) {
      const row = await repo.claimNextPending(db, options.instanceId);
      if (!row) return null;
      const version = await repo.findVersionForRun(db, row.version_id);
      // Null: the version vanished with its deployment; so did the run, by cascade. Try the next one.
      if (!version) continue;
      const { id, org_id, deployment_id, version_id, thread_id } = row;
      return {
        run: { id, org_id, deployment_id, version_id, thread_id },
        input: row.input,
        version,
        thread: thread_id ? { thread_id, ...(await options.loadThreadState(thread_id)) } : null,
        command: row.command,
      };
    }
  }

  return {
    launch,
    pump,

    reserve(): boolean {
      if (!state.open || state.pendingMayExist) return false;
      return slots.tryTake();
    },

    release(): void {
      slots.release();
      pump();
    },

    enqueued(): void {
      state.queuedHere++;
      state.pendingMayExist = true;
      pump();
      options.wakeUps?.send('pending');
    },

    /** Starts taking runs, looking for pending ones first. */
    open(): void {
      state.open = true;
      state.pendingMayExist = true;
      pump();
    },

    close(): void {
      state.open = false;
    },
  };
}

export type RunQueue = ReturnType<typeof createRunQueue>;
