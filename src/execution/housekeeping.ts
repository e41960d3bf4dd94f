import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import { deleteExpired } from '../idempotency/store.js';
import type { EndRecorder } from '../run-record/end-recorder.js';
import type { Signals } from '../signals/hub.js';
import type { ActiveRuns } from './active-runs.js';
import { type InstanceLease, LOST_RUN_ERROR } from './instance-lease.js';
import type { Peers } from './peers.js';
import type { RunQueue } from './run-queue.js';

/**
 * The instance's periodic work: its lease, runs of dead instances failed as lost, processes of
 * runs canceled elsewhere stopped, ends kept through an outage written, pending runs of other
 * instances picked up, expired idempotency keys forgotten. Signals from other instances do the
 * urgent part at once (their subscribers are given in src/compose.ts); the tick makes up for any
 * missed one.
 */
export function createHousekeeping(options: {
  db: Kysely<Database>;
  lease: InstanceLease;
  peers: Peers;
  endRecorder: EndRecorder;
  activeRuns: ActiveRuns;
  queue: RunQueue;
  /** `instanceStarted` is emitted once this instance is registered. */
  signals: Signals;
  logger: Logger;
  tickMs: number;
}) {
  const { db, lease, peers, endRecorder, activeRuns, queue, logger } = options;
  const state = {
    registered: false,
    stopping: false,
    ticking: false,
    timer: null as NodeJS.Timeout | null,
    /** Ticks (or registrations) in a row that failed: an outage is logged when it starts and when it ends. */
    failures: 0,
  };

  /** Logs a failed tick as the claim loop does (db/claim-loop.ts): an error at the first, debug after. */
  function failed(error: unknown, message: string): void {
    state.failures++;
    if (state.failures === 1) logger.error({ err: error }, message);
    else logger.debug({ err: error, failures: state.failures }, `${message} again`);
  }

  function worked(): void {
    if (state.failures > 0) logger.info({ failures: state.failures }, 'housekeeping: working again');
    state.failures = 0;
  }

  /** Fails runs whose instance died, including this instance's previous life. */
  async function failLostRuns(): Promise<void> {
    for (const runId of await lease.findLostRuns()) {
      const outcome = { status: 'failed' as const, output: null, error: LOST_RUN_ERROR };
      const ended = await endRecorder.end({ runId, from: ['running'], outcome, seq: 'next' });
      if (ended) logger.warn({ runId }, 'run lost with its instance marked failed');
    }
  }

  async function tick(): Promise<void> {
    if (state.ticking || state.stopping) return;
    state.ticking = true;
    try {
      await endRecorder.retryUnrecorded();
      peers.seen(await lease.heartbeat());
      await failLostRuns();
      await activeRuns.stopEndedElsewhere();
      await activeRuns.retryThreadRunStops();
      // Runs other instances left pending start here when a slot is free.
      queue.pump();
      await deleteExpired(db);
      await lease.prune();
      worked();
    } catch (error) {
      failed(error, 'housekeeping tick failed');
    } finally {
      state.ticking = false;
    }
  }

  function every(ms: number, task: () => Promise<void>, repeat: boolean): void {
    const schedule = repeat ? setInterval : setTimeout;
    state.timer = schedule(() => void task(), ms);
    state.timer.unref();
  }

  /** Registers the instance; until the database answers, tries again every tick. */
  async function register(): Promise<void> {
    if (state.stopping) return;
    try {
      peers.seen(await lease.register());
      await failLostRuns();
    } catch (error) {
      failed(error, 'the run executor cannot reach the database; retrying');
      every(options.tickMs, register, false);
      return;
    }
    worked();
    state.registered = true;
    options.signals.emit('instanceStarted', { instanceId: lease.id });
    queue.open();
    every(options.tickMs, tick, true);
    // New runs queue behind those an earlier life left pending until the queue's first look has answered: the
    // service starts once it has (a few statements), so a run posted at once does not wait behind an empty queue.
    await queue.settled();
  }

  return {
    /** Starts the tick; when the database does not answer yet, the service still starts (routes answer 503). */
    start: register,

    async stop(): Promise<void> {
      state.stopping = true;
      if (state.timer) {
        clearInterval(state.timer);
        clearTimeout(state.timer);
      }
    },

    /** Marks the lease released so other instances need not wait for it to lapse. */
    async releaseLease(): Promise<void> {
      if (state.registered) await lease.release().catch(() => {});
    },
  };
}
