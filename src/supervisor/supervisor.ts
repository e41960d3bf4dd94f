import { mkdirSync, rmdirSync } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { refusedAsData } from '../db/sqlstate.js';
import type { Database } from '../db/types.js';
import type { LocalEventBus } from '../events/bus.js';
import { liveEnd, type RunLifecycle, type RunOutcome } from '../runs/lifecycle.js';
import type { RunObserver } from '../runs/observer.js';
import * as repo from '../runs/repository.js';
import type { RunIdentity, RunStatus } from '../runs/types.js';
import { RunEventLog } from './event-log.js';
import { createInstanceLease, instanceName, LOST_RUN_ERROR } from './instance-lease.js';
import { type ProcessExit, type RunnerProcess, startRunnerProcess } from './process-runner.js';
import type { RunnerMessage } from './protocol.js';
import { Slots } from './slots.js';
import { createSpawner } from './spawner.js';
import type { WakeUps } from './wake-ups.js';

/** A run's scratch folder goes with the run; most runners leave it empty, which one rmdir settles. */
async function removeScratch(folder: string): Promise<void> {
  try {
    rmdirSync(folder);
  } catch {
    await rm(folder, { recursive: true, force: true }).catch(() => {});
  }
}

export const DEFAULT_RUNNER_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface SupervisorTimings {
  /** Between SIGTERM and SIGKILL of a run's process group (CONTRACTS §6: 5 s). */
  killGraceMs: number;
  /** Heartbeat, lost-run sweep and queue poll; default a third of the lease. */
  leaseTickMs?: number;
}

export interface SupervisorOptions {
  db: Kysely<Database>;
  bus: LocalEventBus;
  lifecycle: RunLifecycle;
  logger: Logger;
  maxConcurrentRuns: number;
  dataDir: string;
  runnerPath: string | undefined;
  instanceLeaseSeconds: number;
  timings: SupervisorTimings;
  observer?: RunObserver;
  /** On PostgreSQL: other instances' news of queued and canceled runs, heard before the next tick. */
  wakeUps?: WakeUps;
  /** builds (CONTRACTS §8): see VersionPreparer. */
  prepareVersion?: VersionPreparer | undefined;
}

/**
 * builds (CONTRACTS §8), lead: port to execution/. What a run of a version starts with: the built
 * files of a bundle version as cwd (built here first, logging to the run), the deployment's variables
 * under the version's env, PATH for its environment.
 */
export type VersionPreparer = (
  versionId: string,
  log: (message: string, stream: 'stdout' | 'stderr') => void,
) => Promise<{ cwd: string | null; env: Record<string, string>; readOnly: string[] }>;

/** What a runner is started with. */
export interface LaunchSpec {
  run: { id: string; org_id: string; deployment_id: string; version_id: string; thread_id: string | null };
  input: Record<string, unknown>;
  version: { command: string[]; cwd: string | null; env: Record<string, string>; timeout_seconds: number | null };
  thread: { thread_id: string; values: Record<string, unknown> | null } | null;
}

/** Reads a thread's values for a queued run that starts later. */
export type ThreadValuesLoader = (threadId: string) => Promise<Record<string, unknown> | null>;

interface ActiveRun {
  id: string;
  orgId: string;
  identity: RunIdentity;
  log: RunEventLog;
  process: RunnerProcess | null;
  result: { output: Record<string, unknown>; values: Record<string, unknown> | undefined } | null;
  failure: string | null;
  badResult: string | null;
  timedOut: boolean;
  /** The runner gave its result but did not exit within the grace, so it was stopped. */
  reapedAfterResult: boolean;
  /** The run's end is being written (or was): later output and exits change nothing. */
  ending: boolean;
  timers: NodeJS.Timeout[];
}

/**
 * Owns the runner processes of this instance: starts runs in free slots (queued runs in order
 * of creation), turns their output into events, ends runs however they end, and keeps an
 * instance lease so that runs of a dead instance are found and failed.
 */
export function createSupervisor(options: SupervisorOptions) {
  const { db, bus, lifecycle, logger, timings } = options;
  const lease = createInstanceLease(db, {
    name: instanceName(options.dataDir),
    leaseSeconds: options.instanceLeaseSeconds,
  });
  const slots = new Slots(options.maxConcurrentRuns);
  const spawner = createSpawner(logger);
  const active = new Map<string, ActiveRun>();
  const exits = new Set<Promise<void>>();
  let loadThreadValues: ThreadValuesLoader = async () => null;
  let started = false;
  let stopping = false;
  /** Pending runs may exist: new runs queue behind them rather than jump ahead. */
  let backlog = true;
  /** Counts runs queued here, so a search for pending runs knows whether one came in meanwhile. */
  let queued = 0;
  let pumping = false;
  /** Other instances are alive, so run events are announced to them; assumed until the database says otherwise. */
  let peers = true;
  /** An instance said hello since the last look at the leases. */
  let heardHello = false;
  let pumpAgain = false;
  let ticker: NodeJS.Timeout | null = null;
  let retryStart: NodeJS.Timeout | null = null;
  let ticking = false;
  /** Ends that could not be written (the database was down): kept here and retried every tick. */
  const unrecorded = new Map<string, { outcome: RunOutcome; nextSeq: number; unstored: readonly repo.EventRow[] }>();

  bus.setLiveSource((runId) => {
    const run = active.get(runId);
    return run ? { orgId: run.orgId, backlog: run.log.backlog() } : null;
  });

  const runsDir = path.resolve(options.dataDir, 'runs');

  function environmentFor(spec: LaunchSpec): Record<string, string> {
    return {
      PATH: options.runnerPath ?? DEFAULT_RUNNER_PATH,
      ...spec.version.env,
      CREWD_RUN_ID: spec.run.id,
      CREWD_DEPLOYMENT_ID: spec.run.deployment_id,
      CREWD_VERSION_ID: spec.run.version_id,
      CREWD_THREAD_ID: spec.run.thread_id ?? '',
    };
  }

  async function prepareCwd(spec: LaunchSpec): Promise<{ cwd: string; scratch: boolean } | { error: string }> {
    if (spec.version.cwd) {
      const info = await stat(spec.version.cwd).catch(() => null);
      if (!info?.isDirectory()) return { error: `working folder ${spec.version.cwd} not found` };
      return { cwd: spec.version.cwd, scratch: false };
    }
    const cwd = path.join(runsDir, spec.run.id);
    // Synchronous on purpose: one small mkdir costs less than a trip through the thread pool, on every run's start.
    mkdirSync(cwd, { recursive: true });
    return { cwd, scratch: true };
  }

  function onMessage(run: ActiveRun, message: RunnerMessage): void {
    if (run.ending) return;
    switch (message.kind) {
      case 'event':
        run.log.appendFromRunner(message.type, message.data);
        return;
      case 'result':
        if (run.result || run.failure || run.badResult) return;
        run.result = { output: message.output, values: message.values };
        armResultGrace(run);
        return;
      case 'failure':
        if (run.result || run.failure || run.badResult) return;
        run.failure = message.error;
        armResultGrace(run);
        return;
      case 'bad_result':
        if (run.result || run.failure || run.badResult) return;
        run.badResult = message.error;
        armResultGrace(run);
        return;
    }
  }

  /** A runner that reported its end gets the kill grace to exit; then it is stopped. */
  function armResultGrace(run: ActiveRun): void {
    const timer = setTimeout(() => {
      run.reapedAfterResult = true;
      void run.process?.terminate();
    }, timings.killGraceMs);
    timer.unref();
    run.timers.push(timer);
  }

  function outcomeOf(run: ActiveRun, exit: ProcessExit, timeoutSeconds: number | null): RunOutcome {
    const failed = (error: string): RunOutcome => ({ status: 'failed', output: null, error });
    if (exit.kind === 'spawn_failed') return failed(`Failed to start runner: ${exit.error}`);
    if (run.timedOut) return failed(`Run timed out after ${timeoutSeconds} seconds`);
    if (run.badResult) return failed(run.badResult);
    if (run.failure) return failed(run.failure);
    if (run.result && (exit.code === 0 || run.reapedAfterResult || exit.statusLost)) {
      return { status: 'succeeded', output: run.result.output, values: run.result.values, error: null };
    }
    const stderr = run.process?.lastStderrLine();
    const detail = stderr ? `: ${stderr}` : '';
    if (exit.code !== null && exit.code !== 0) return failed(`Runner exited with code ${exit.code}${detail}`);
    if (exit.signal) return failed(`Runner was stopped by signal ${exit.signal}${detail}`);
    if (exit.statusLost) return failed('Runner lost: its exit status went with the runner spawner');
    return failed('Runner exited without a result');
  }

  /** Writes the run's end (once) and hands the final event to live streams. */
  async function end(run: ActiveRun, outcome: RunOutcome): Promise<boolean> {
    if (run.ending) return false;
    run.ending = true;
    const { unstored, nextSeq } = await run.log.close();
    return record(run, outcome, nextSeq, unstored);
  }

  /**
   * Writes an end; one the database cannot write now is kept for the next tick. One it refuses as
   * data (protocol.ts makes the known cases storable) would never be written, so the run fails
   * instead, without the runner's unstored events and result.
   */
  async function record(
    run: ActiveRun,
    outcome: RunOutcome,
    nextSeq: number,
    unstored: readonly repo.EventRow[],
    refusedBefore = false,
  ): Promise<boolean> {
    try {
      const ended = await lifecycle.end(run.id, ['running'], outcome, nextSeq, unstored, run.identity);
      if (!ended) return false;
      bus.publish(run.id, liveEnd(ended));
      return true;
    } catch (error) {
      if (!refusedBefore && refusedAsData(error)) {
        logger.error({ err: error, runId: run.id }, 'the database refused the end of a run; failing it');
        const reason = error instanceof Error ? error.message : String(error);
        const failed: RunOutcome = {
          status: 'failed',
          output: null,
          error: `Run output could not be stored: ${reason}`,
        };
        const started = unstored.filter((event) => event.type === 'run.started');
        return record(run, failed, nextSeq, started, true);
      }
      logger.error({ err: error, runId: run.id }, 'could not record the end of a run; retrying on the next tick');
      unrecorded.set(run.id, { outcome, nextSeq, unstored });
      return false;
    }
  }

  async function retryUnrecordedEnds(): Promise<void> {
    for (const [runId, pending] of unrecorded) {
      const ended = await lifecycle.end(runId, ['running'], pending.outcome, pending.nextSeq, pending.unstored);
      // Null: another instance ended it meanwhile (as lost, when this one's lease ran out).
      unrecorded.delete(runId);
      if (ended) {
        logger.info({ runId }, 'end of a run recorded after a retry');
        bus.publish(runId, liveEnd(ended));
      }
    }
  }

  /** builds (CONTRACTS §8), lead: port to execution/. The spec with the version's launch plan applied. */
  async function withVersionLaunch(spec: LaunchSpec, log: RunEventLog): Promise<LaunchSpec> {
    if (!options.prepareVersion) return spec;
    const plan = await options.prepareVersion(spec.run.version_id, (message, stream) =>
      log.append('log', { message, stream }),
    );
    return { ...spec, version: { ...spec.version, cwd: plan.cwd ?? spec.version.cwd, env: plan.env } };
  }

  /** Starts the process of a run this instance holds a slot for; resolves once it runs (or failed to). */
  async function launch(given: LaunchSpec): Promise<RunStatus> {
    let spec = given;
    const run: ActiveRun = {
      id: spec.run.id,
      orgId: spec.run.org_id,
      identity: { deploymentId: spec.run.deployment_id, threadId: spec.run.thread_id },
      log: new RunEventLog(spec.run.id, 0, db, bus, logger),
      process: null,
      result: null,
      failure: null,
      badResult: null,
      timedOut: false,
      reapedAfterResult: false,
      ending: false,
      timers: [],
    };
    active.set(run.id, run);

    let exit: Promise<ProcessExit>;
    let scratch: string | null = null;
    // builds (CONTRACTS §8), lead: port with launch: the one call into src/builds.
    const prepared = await withVersionLaunch(spec, run.log)
      .then((launchable) => {
        spec = launchable;
        return prepareCwd(launchable);
      })
      .catch((error: Error) => ({ error: error.message }));
    if (!('error' in prepared) && prepared.scratch) scratch = prepared.cwd;
    if (run.ending) {
      // Canceled or stopped while its folder was being made: nothing to start.
      exit = Promise.resolve({ kind: 'spawn_failed', error: 'run ended before it started' });
    } else if ('error' in prepared) {
      exit = Promise.resolve({ kind: 'spawn_failed', error: prepared.error });
    } else {
      const proc = startRunnerProcess(
        spawner,
        {
          command: spec.version.command,
          cwd: prepared.cwd,
          env: environmentFor(spec),
          stdin: JSON.stringify({ run_id: spec.run.id, input: spec.input, thread: spec.thread }),
        },
        { killGraceMs: timings.killGraceMs, onMessage: (message) => onMessage(run, message) },
      );
      run.process = proc;
      exit = proc.exited;
      if (await proc.started) {
        options.observer?.runStarted?.();
        run.log.append('run.started', { entrypoint: spec.version.command.join(' ') });
        if (spec.version.timeout_seconds !== null) {
          const timer = setTimeout(() => {
            run.timedOut = true;
            void proc.terminate();
          }, spec.version.timeout_seconds * 1000);
          timer.unref();
          run.timers.push(timer);
        }
      }
    }

    const finished = exit.then(async (result) => {
      try {
        for (const timer of run.timers) clearTimeout(timer);
        await end(run, outcomeOf(run, result, spec.version.timeout_seconds));
        // Whatever the runner left in its group is gone before its slot is free again.
        await run.process?.terminate();
      } finally {
        active.delete(run.id);
        if (scratch) await removeScratch(scratch);
        slots.release();
        // Only runs queued here are looked for at once; runs other instances queued wait for the tick.
        if (backlog) pump();
      }
    });
    const tracked = finished.catch((error: unknown) => {
      logger.error({ err: error, runId: run.id }, 'supervising a run failed');
    });
    exits.add(tracked);
    void tracked.finally(() => exits.delete(tracked));

    // A spawn failure ends the run right away; the caller then reports it as it really is.
    if (run.process && (await run.process.started)) return 'running';
    await finished;
    return 'failed';
  }

  /** Starts queued runs, oldest first, while slots are free. */
  function pump(): void {
    if (!started || stopping) return;
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    void (async () => {
      try {
        do {
          pumpAgain = false;
          while (!stopping && slots.tryTake()) {
            let claimed: Awaited<ReturnType<typeof claimNext>> = null;
            const queuedBefore = queued;
            try {
              claimed = await claimNext();
            } catch (error) {
              slots.release();
              throw error;
            }
            if (!claimed) {
              slots.release();
              // Only if no run was queued meanwhile (this search may have missed it).
              if (queued === queuedBefore) backlog = false;
              break;
            }
            // There may be more: look again when a slot frees, and let new runs queue behind them.
            backlog = true;
            void launch(claimed);
          }
        } while (pumpAgain && !stopping);
      } catch (error) {
        logger.error({ err: error }, 'starting queued runs failed');
      } finally {
        pumping = false;
      }
    })();
  }

  async function claimNext(): Promise<LaunchSpec | null> {
    for (;;) {
      const row = await repo.claimNextPending(db, lease.id);
      if (!row) return null;
      const version = await repo.findVersionForRun(db, row.version_id);
      const spec: LaunchSpec = {
        run: {
          id: row.id,
          org_id: row.org_id,
          deployment_id: row.deployment_id,
          version_id: row.version_id,
          thread_id: row.thread_id,
        },
        input: row.input,
        version: version ?? { command: [], cwd: null, env: {}, timeout_seconds: null },
        thread: row.thread_id ? { thread_id: row.thread_id, values: await loadThreadValues(row.thread_id) } : null,
      };
      if (version) return spec;
      // The version vanished with its deployment; so did the run, by cascade. Try the next one.
    }
  }

  /** Fails runs whose instance died, including this instance's previous life. */
  async function recoverLostRuns(): Promise<void> {
    const lost = await lease.findLostRuns();
    for (const runId of lost) {
      const ended = await lifecycle.end(
        runId,
        ['running'],
        { status: 'failed', output: null, error: LOST_RUN_ERROR },
        'next',
      );
      if (ended) {
        logger.warn({ runId }, 'run lost with its instance marked failed');
        bus.publish(runId, liveEnd(ended));
      }
    }
  }

  /** Runs canceled through another instance: their processes stop here. */
  async function stopCanceledElsewhere(ids: string[] = [...active.keys()]): Promise<void> {
    if (ids.length === 0) return;
    const rows = await db
      .selectFrom('runs')
      .select(['id', 'status'])
      .where('id', 'in', ids)
      .where('status', '<>', 'running')
      .execute();
    for (const row of rows) {
      const run = active.get(row.id);
      if (!run || run.ending) continue;
      run.ending = true;
      await run.log.close();
      void run.process?.terminate();
    }
  }

  options.wakeUps?.onPending(() => pump());
  options.wakeUps?.onHello((instanceId) => {
    if (instanceId === lease.id) return;
    peers = true;
    heardHello = true;
  });
  options.wakeUps?.onStop((runId) => {
    if (!active.has(runId)) return;
    stopCanceledElsewhere([runId]).catch((error: unknown) => {
      logger.error({ err: error, runId }, 'stopping a run canceled elsewhere failed; retrying on the next tick');
    });
  });

  async function tick(): Promise<void> {
    if (ticking || stopping) return;
    ticking = true;
    try {
      await retryUnrecordedEnds();
      peers = (await lease.heartbeat()) || heardHello;
      heardHello = false;
      await recoverLostRuns();
      await stopCanceledElsewhere();
      // Runs other instances left pending start here when a slot is free. New runs keep their fast
      // path meanwhile: holding them back on every tick would queue them for nothing.
      pump();
      await db
        .deleteFrom('idempotency_keys')
        .where('created_at', '<', new Date(Date.now() - 24 * 3600_000))
        .execute();
      await lease.prune();
    } catch (error) {
      logger.error({ err: error }, 'supervisor tick failed');
    } finally {
      ticking = false;
    }
  }

  return {
    get instanceId() {
      return lease.id;
    },

    /** Whether other instances are alive to hear this one's run events (see wake-ups' `hello`). */
    get peersAlive() {
      return peers;
    },

    setThreadValuesLoader(loader: ThreadValuesLoader): void {
      loadThreadValues = loader;
    },

    /** A slot for a new run, unless none is free or queued runs come first. */
    reserve(): boolean {
      if (!started || stopping || backlog) return false;
      return slots.tryTake();
    },

    /** Gives back a reserved slot whose run was not created. */
    release(): void {
      slots.release();
      pump();
    },

    /** Starts a run created as `running` under a reservation. */
    launch,

    /** A run was queued as pending: start it when a slot is free, here or on another instance. */
    enqueued(): void {
      queued++;
      backlog = true;
      pump();
      options.wakeUps?.send('pending');
    },

    /** A run going on another instance was canceled here: its owner stops the process now. */
    canceledElsewhere(runId: string): void {
      options.wakeUps?.send(`stop:${runId}`);
    },

    owns: (runId: string) => active.has(runId),

    /**
     * Cancels a run this instance runs: its end is written at once, then its process group
     * is stopped. False when the run is not running here.
     */
    async cancel(runId: string): Promise<boolean> {
      const run = active.get(runId);
      if (!run) return false;
      const ended = await end(run, { status: 'canceled', output: null, error: null });
      void run.process?.terminate();
      return ended;
    },

    /**
     * Starts taking runs. When the database does not answer yet, the service still starts (its
     * routes answer 503) and this keeps trying in the background until it does.
     */
    async start(): Promise<void> {
      spawner.start();
      await mkdir(runsDir, { recursive: true });
      const every = timings.leaseTickMs ?? Math.max(200, (options.instanceLeaseSeconds * 1000) / 3);
      const begin = async () => {
        if (stopping) return;
        try {
          peers = (await lease.register()) || heardHello;
          await recoverLostRuns();
        } catch (error) {
          logger.error({ err: error }, 'supervisor cannot reach the database; retrying');
          retryStart = setTimeout(() => void begin(), every);
          retryStart.unref();
          return;
        }
        started = true;
        options.wakeUps?.send(`hello:${lease.id}`);
        backlog = true;
        pump();
        ticker = setInterval(() => void tick(), every);
        ticker.unref();
      };
      await begin();
    },

    /**
     * Stops taking runs; runs still going are failed as lost and their process groups stopped,
     * so no runner outlives the service. Queued runs stay pending for the next start.
     */
    async stop(): Promise<void> {
      if (stopping) return;
      stopping = true;
      if (ticker) clearInterval(ticker);
      if (retryStart) clearTimeout(retryStart);
      for (const run of active.values()) {
        await end(run, { status: 'failed', output: null, error: LOST_RUN_ERROR });
        void run.process?.terminate();
      }
      await Promise.all([...exits]);
      await retryUnrecordedEnds().catch(() => {});
      await spawner.stop();
      if (started) await lease.release().catch(() => {});
    },

    /** Runs whose processes are alive here (for tests and the bench). */
    activeCount: () => active.size,
  };
}

export type Supervisor = ReturnType<typeof createSupervisor>;
