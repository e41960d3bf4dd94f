import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { type OrganizationsWatch, organizationShare, watchOrganizations } from '../access/organization-share.js';
import { createClaimLoop, type Look } from '../db/claim-loop.js';
import type { Database } from '../db/types.js';
import * as repo from '../run-record/repository.js';
import type { LaunchSpec, RunStatus, ThreadState } from '../run-record/types.js';
import type { ActiveRuns } from './active-runs.js';
import { Slots } from './slots.js';

/** Reads a thread's values and latest checkpoint for a queued run that starts later. */
export type ThreadStateLoader = (threadId: string) => Promise<ThreadState>;

/** How often an instance that knows of one organization looks whether another was made elsewhere. */
const ORGANIZATIONS_RECHECK_MS = 5_000;

/**
 * Slots and pending runs: a new run takes a free slot at once unless queued runs come first;
 * queued runs (this instance's or any other's) start oldest first as slots free up. An organization
 * holding its share of the slots (MAX_RUNS_PER_ORGANIZATION, counted on this instance) queues, and
 * its queued runs wait while other organizations' runs take the free slots.
 */
export function createRunQueue(options: {
  db: Kysely<Database>;
  instanceId: string;
  maxConcurrentRuns: number;
  /** MAX_RUNS_PER_ORGANIZATION: 0 for a share computed from maxConcurrentRuns. */
  maxRunsPerOrganization?: number | undefined;
  /** Whether the installation has several organizations; made here (asked every ORGANIZATIONS_RECHECK_MS) if not given. */
  organizations?: OrganizationsWatch | undefined;
  /** Opens a version's env sealed with SECRETS_KEY. */
  openEnv?:
    | ((version: { id: string; env: Record<string, string>; env_encrypted?: boolean }) => Record<string, string>)
    | undefined;
  activeRuns: ActiveRuns;
  loadThreadState: ThreadStateLoader;
  /** Longest wait between two looks for runs other instances queued (the housekeeping tick). */
  tickMs?: number | undefined;
  logger: Logger;
}) {
  const { db, activeRuns, logger } = options;
  const organizations = options.organizations ?? watchOrganizations(db, ORGANIZATIONS_RECHECK_MS);
  const share = () =>
    organizationShare(options.maxConcurrentRuns, organizations.several, options.maxRunsPerOrganization ?? 0);
  const slots = new Slots(options.maxConcurrentRuns, share);
  const state = {
    /** Taking runs: from the first successful contact with the database until shutdown. */
    open: false,
    /** Pending runs may exist, so new runs queue behind them rather than jump ahead. */
    pendingMayExist: true,
    /** Runs queued here, counted, so a search for pending runs knows whether one came in meanwhile. */
    queuedHere: 0,
  };

  function slotFreed(orgId: string): void {
    // An organization at its share may have runs queued that only its own slot lets start (a share of every slot
    // is no share: then the usual bookkeeping already knows whether runs wait).
    if (share() < options.maxConcurrentRuns && slots.atCap(orgId)) state.pendingMayExist = true;
    slots.release(orgId);
    // Only runs queued here are looked for at once; runs other instances queued wait for the tick.
    if (state.pendingMayExist) pump();
  }

  /** Starts a run in the slot it holds; the slot is free again once the run's process is gone. */
  function launch(spec: LaunchSpec): Promise<RunStatus> {
    const { started, gone } = activeRuns.launch(spec);
    void gone.then(() => slotFreed(spec.run.org_id));
    return started;
  }

  /** The look for pending runs under way: a cancel waits for the runs it claims to be launched (`settled`). */
  let looking: Promise<unknown> | null = null;
  function track<T>(look: Promise<T>): Promise<T> {
    looking = look;
    const done = () => {
      if (looking === look) looking = null;
    };
    look.then(done, done);
    return look;
  }

  /** Starts queued runs, oldest first, while slots are free: the queue's claim loop looks on a wake and every tick. */
  const loop = createClaimLoop({
    name: 'run queue',
    logger,
    intervals: { idleMs: options.tickMs ?? null, busyMs: 0, backoffMs: 100, maxBackoffMs: options.tickMs ?? 1_000 },
    look: startPending,
  });

  function pump(): void {
    if (state.open) loop.wake();
  }

  function startPending() {
    return track(lookForPending());
  }

  async function lookForPending(): Promise<Look> {
    await organizations.current();
    let claimedRuns = 0;
    // A look with no run known to wait (the tick's, for runs other instances queued) first asks, holding no slot:
    // a run admitted meanwhile takes a free slot then, instead of finding it held by a look that finds nothing.
    if (!state.pendingMayExist && slots.hasFree()) {
      const queuedBefore = state.queuedHere;
      if (!(await repo.pendingRunWaits(db, slots.organizationsAtCap()))) return nothingPending(queuedBefore, 0);
    }
    while (state.open) {
      if (!slots.tryTakeAny()) return { kind: 'full' }; // a slot's end looks again
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
        return nothingPending(queuedBefore, claimedRuns);
      }
      // There may be more: look again when a slot frees, and let new runs queue behind them.
      state.pendingMayExist = true;
      slots.assign(claimed.run.org_id);
      claimedRuns++;
      void launch(claimed);
    }
    return { kind: 'done', claimed: claimedRuns, dueAt: null };
  }

  /** The end of a look that found no (more) runs to start. */
  function nothingPending(queuedBefore: number, claimedRuns: number): Look {
    // Runs of organizations at their share may wait still: their own slots' ends look again.
    // Only if no run was queued meanwhile (this search may have missed it).
    if (state.queuedHere === queuedBefore) state.pendingMayExist = false;
    return { kind: 'done', claimed: claimedRuns, dueAt: null };
  }

  async function claimNext(): Promise<LaunchSpec | null> {
    for (;;) {
      const row = await repo.claimNextPending(db, options.instanceId, slots.organizationsAtCap());
      if (!row) return null;
      const version = await repo.findVersionForRun(db, row.version_id);
      // Null: the version vanished with its deployment; so did the run, by cascade. Try the next one.
      if (!version) continue;
      const { id, org_id, deployment_id, version_id, thread_id, trace_id, trace_parent_id } = row;
      return {
        run: { id, org_id, deployment_id, version_id, thread_id, trace_id, trace_parent_id },
        input: row.input,
        version: options.openEnv ? { ...version, env: options.openEnv(version) } : version,
        thread: thread_id ? { thread_id, ...(await options.loadThreadState(thread_id)) } : null,
        command: row.command,
      };
    }
  }

  return {
    launch,
    pump,

    reserve(orgId: string): boolean {
      if (!state.open || state.pendingMayExist) return false;
      return slots.tryTake(orgId);
    },

    /** Gives back a slot `reserve` gave whose run was not created; runs queued meanwhile may take it. */
    release(orgId: string): void {
      slots.release(orgId);
      if (state.pendingMayExist) pump();
    },

    /** A run was queued here: new runs queue behind it (the `queued` signal's subscriber then calls `pump`). */
    enqueued(): void {
      state.queuedHere++;
      state.pendingMayExist = true;
    },

    /** Resolves once no look for pending runs is under way: the runs it claimed are launched by then. */
    settled: (): Promise<void> =>
      (looking ?? Promise.resolve()).then(
        () => {},
        () => {},
      ),

    /** Starts taking runs, looking for pending ones first. */
    open(): void {
      state.open = true;
      state.pendingMayExist = true;
      loop.start();
    },

    close(): void {
      state.open = false;
      void loop.stop();
    },
  };
}

export type RunQueue = ReturnType<typeof createRunQueue>;
