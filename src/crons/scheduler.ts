import { setTimeout as sleep } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import { ClaimedJobs, createClaimLoop, type Look } from '../db/claim-loop.js';
import type { Database } from '../db/types.js';
import { AppError } from '../errors.js';
import type { CreatedRun, CreateRunParams } from '../run-record/types.js';
import * as repo from './repository.js';
import { nextTime } from './schedule.js';

/** Instances tell each other on this channel that a cron was created or changed. */
export const CRONS_CHANNEL = 'crewd_crons';

/** The part of the runs service the scheduler uses. */
export interface RunStarter {
  createRun(params: CreateRunParams): Promise<CreatedRun>;
}

export interface CronTimings {
  /** Longest sleep between two looks at the crons, so a lost notification costs at most this. */
  maxWaitMs: number;
  /**
   * How long a claimed due time is this instance's; a crashed instance's claims are taken over after
   * it. Well under `catchUpMs`, so a due time taken over is caught up rather than collapsed.
   */
  claimMs: number;
  /** Due times this instance holds at once (claimed and not yet recorded); a firing mostly waits on the database. */
  concurrency: number;
  /** How long before its due time a cron is claimed, so that its run starts at the due time, not a claim later. */
  leadMs: number;
  /**
   * A due time claimed at most this late is late, not missed: the cron's next time is the one after it,
   * so every such time still starts its run. Claimed later (no instance was up), the times missed collapse into one.
   */
  catchUpMs: number;
}

export const DEFAULT_CRON_TIMINGS: CronTimings = {
  maxWaitMs: 1000,
  claimMs: 5_000,
  concurrency: 512,
  leadMs: 200,
  catchUpMs: 10_000,
};

/** The run of the same cron and due time exists already (SQLSTATE 23505 on `runs_cron_due_idx`). */
const isUniqueViolation = (error: unknown) => (error as { code?: unknown } | null)?.code === '23505';

/** A look found something due that another instance holds locked for a moment: look again soon. */
const BUSY_RETRY_MS = 10;
/** After a look that failed (the database is unreachable), the first wait; it doubles up to `maxWaitMs`. */
const BACKOFF_MS = 100;

/**
 * Starts the runs of due crons. Each instance sleeps until shortly before the earliest due time
 * (at most `maxWaitMs`), claims the crons due by then (SKIP LOCKED, so instances share them out),
 * and at each due time starts the run through the runs service, marked with the cron and the due
 * time, which the database keeps unique: a due time taken over from a crashed instance finds the
 * run that instance started instead of starting a second. The cron's next time is the first after
 * its due time, or after the claim when that came more than `catchUpMs` late, so times missed
 * while no instance ran collapse into one run.
 */
export function createCronScheduler(options: {
  db: Kysely<Database>;
  runs: RunStarter;
  logger: Logger;
  /** Other instances may share the database (PostgreSQL): a change here is announced on `crewd_crons`. */
  shared: boolean;
  timings?: Partial<CronTimings> | undefined;
}) {
  const { db, runs, logger } = options;
  const timings = { ...DEFAULT_CRON_TIMINGS, ...options.timings };
  const jobs = new ClaimedJobs(timings.concurrency, () => loop.wake());
  const loop = createClaimLoop({
    name: 'crons',
    logger,
    intervals: {
      idleMs: timings.maxWaitMs,
      busyMs: BUSY_RETRY_MS,
      backoffMs: Math.min(BACKOFF_MS, timings.maxWaitMs),
      maxBackoffMs: timings.maxWaitMs,
    },
    look,
  });

  /** Claims the crons due by shortly from now while there is room, starting each one's run. */
  async function look(): Promise<Look> {
    let claimed = 0;
    for (;;) {
      const room = jobs.room;
      if (room <= 0) return { kind: 'full' }; // the end of a firing looks again
      if (!loop.running) return { kind: 'done', claimed, dueAt: null };
      const now = new Date();
      const claim = new Date(now.getTime() + timings.claimMs);
      const due = await repo.claimDueCrons(db, {
        now,
        dueBy: new Date(now.getTime() + timings.leadMs),
        until: claim,
        limit: room,
      });
      for (const cron of due) jobs.add(fire(cron, now, claim));
      claimed += due.length;
      if (due.length < room) break;
    }
    const earliest = await repo.earliestDue(db, new Date());
    return { kind: 'done', claimed, dueAt: earliest ? earliest.getTime() - timings.leadMs : null };
  }

  /** Starts the due time's run, unless another claim of it (one that lapsed, or overtook this one) did. */
  async function startRun(cron: repo.ClaimedCron, dueAt: Date): Promise<string> {
    if (cron.lapsed_claim !== null) {
      const started = await repo.findRunOfDueTime(db, cron.id, dueAt);
      if (started) return started.id;
    }
    try {
      const run = await runs.createRun({
        orgId: cron.org_id,
        deploymentId: cron.deployment_id,
        environment: cron.environment,
        input: cron.input,
        threadId: cron.thread_id,
        ...(cron.thread_id ? { multitaskStrategy: cron.multitask_strategy } : {}),
        cron: { id: cron.id, dueAt },
        idempotencyScope: `cron:${cron.id}`,
      });
      return run.run_id;
    } catch (error) {
      const started = isUniqueViolation(error) ? await repo.findRunOfDueTime(db, cron.id, dueAt) : undefined;
      if (started) return started.id;
      throw error;
    }
  }

  async function fire(cron: repo.ClaimedCron, claimedAt: Date, claim: Date): Promise<void> {
    const dueAt = cron.due_at as Date;
    // A timer may fire a millisecond early by the wall clock; a run never starts before its time.
    while (Date.now() < dueAt.getTime()) await sleep(Math.max(1, dueAt.getTime() - Date.now()));
    let outcome: { runId: string; at: Date } | { error: string };
    try {
      outcome = { runId: await startRun(cron, dueAt), at: new Date() };
    } catch (error) {
      if (!(error instanceof AppError) || error.statusCode >= 500) {
        // The database or the service failed, not the cron: the same due time is tried again a moment later.
        logger.warn({ err: error, cron_id: cron.id }, 'crons: run not started; trying this due time again');
        await repo
          .retryClaimAt(db, cron.id, claim, new Date(Date.now() + timings.maxWaitMs))
          .catch(() => logger.debug({ cron_id: cron.id }, 'crons: the claim lapses on its own'));
        return;
      }
      outcome = { error: error.message };
    }
    try {
      const missed = claimedAt.getTime() - dueAt.getTime() > timings.catchUpMs;
      const nextAt = nextTime(cron.schedule, cron.timezone, missed ? claimedAt : dueAt);
      await repo.recordFiring(db, { id: cron.id, claim, dueAt, nextAt, outcome });
      if (nextAt) loop.wakeBy(nextAt.getTime() - timings.leadMs);
    } catch (error) {
      // The claim lapses and the due time is tried again, finding the run already started.
      logger.warn({ err: error, cron_id: cron.id }, 'crons: firing not recorded; the claim will lapse');
    }
  }

  return {
    /** A cron was created or changed here: look now, and tell the other instances to. */
    changed(): void {
      loop.wake();
      if (!options.shared) return;
      sql`select pg_notify(${CRONS_CHANNEL}, 'changed')`.execute(db).catch((error: unknown) => {
        logger.debug({ err: error }, 'crons: notification not sent; the other instances look within a second');
      });
    },

    /** Another instance created or changed a cron (a notification on `crewd_crons`): look now. */
    changedElsewhere(): void {
      loop.wake();
    },

    start(): void {
      loop.start();
    },

    /** Stops looking, then waits for the runs being started to be started and recorded. */
    async stop(): Promise<void> {
      await loop.stop();
      await jobs.settled();
    },
  };
}

export type CronScheduler = ReturnType<typeof createCronScheduler>;
