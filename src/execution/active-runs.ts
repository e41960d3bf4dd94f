import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import type { LocalEventBus } from '../events/bus.js';
import type { EndRecorder, RunOutcome } from '../runs/end-recorder.js';
import type { RunObserver } from '../runs/observer.js';
import { findEndedAmong } from '../runs/repository.js';
import type { LaunchSpec, RunStatus } from '../runs/types.js';
import { ActiveRun } from './active-run.js';
import { RunEventLog } from './event-log.js';
import { LOST_RUN_ERROR } from './instance-lease.js';
import type { ProcessLauncher } from './launcher.js';
import { type ProcessExit, startRunnerProcess } from './process-runner.js';
import { prepareRunFolder, removeScratchFolder, runnerEnvironment } from './run-setup.js';
import type { RunningRuns } from './running-runs.js';

export interface ActiveRunsOptions {
  db: Kysely<Database>;
  bus: LocalEventBus;
  endRecorder: EndRecorder;
  launcher: ProcessLauncher;
  running: RunningRuns;
  logger: Logger;
  /** Where scratch folders of runs without a `cwd` go. */
  runsDir: string;
  runnerPath: string | undefined;
  /** Between SIGTERM and SIGKILL of a run's process group (CONTRACTS §6: 5 s). */
  killGraceMs: number;
  /** A thread run's process is gone: its thread's next run, if it waits for that, may start. */
  threadRunStopped: (runId: string) => Promise<void>;
  observer?: RunObserver | undefined;
}

/**
 * The runs whose processes run here: starts each one's process, ends it however it ends (its
 * exit, a cancel, shutdown), and frees its slot once nothing of it is left.
 */
export function createActiveRuns(options: ActiveRunsOptions) {
  const { db, bus, endRecorder, running, logger } = options;
  /** Runs' supervision until their slot is free, so shutdown can wait for all of them. */
  const supervising = new Set<Promise<void>>();

  /** Writes the run's end, once; later output and exits change nothing. */
  async function finish(run: ActiveRun, outcome: RunOutcome): Promise<boolean> {
    if (run.ending) return false;
    run.ending = true;
    const { unstored, nextSeq } = await run.log.close();
    return endRecorder.recordOwnEnd({
      runId: run.id,
      from: ['running'],
      outcome,
      seq: nextSeq,
      unstored,
      identity: run.identity,
    });
  }

  /** Thread runs whose stop could not be recorded (the database was away): tried again on each tick. */
  const unrecordedStops = new Set<string>();

  async function threadRunStopped(runId: string): Promise<void> {
    try {
      await options.threadRunStopped(runId);
      unrecordedStops.delete(runId);
    } catch (error) {
      // Until it is recorded, the thread's next run waits.
      unrecordedStops.add(runId);
      logger.error({ err: error, runId }, 'could not record that a thread run stopped; retrying on the next tick');
    }
  }

  /** Starts the process in the run's folder; the exit of a run that could not start says why. */
  async function startProcess(run: ActiveRun, cwd: string): Promise<{ exited: Promise<ProcessExit> }> {
    const { spec } = run;
    const proc = startRunnerProcess(
      options.launcher,
      {
        command: spec.version.command,
        cwd,
        env: runnerEnvironment(spec, options.runnerPath),
        stdin: JSON.stringify({ run_id: spec.run.id, input: spec.input, thread: spec.thread, command: spec.command }),
        confinement: { writable: [cwd], readOnly: [] },
      },
      { killGraceMs: options.killGraceMs, onMessage: (message) => run.onMessage(message) },
    );
    run.process = proc;
    if (await proc.started) {
      options.observer?.runStarted?.();
      run.log.append('run.started', { entrypoint: spec.version.command.join(' ') });
      if (spec.version.timeout_seconds !== null) run.armTimeout(spec.version.timeout_seconds);
    }
    return { exited: proc.exited };
  }

  /**
   * Starts the process of a run this instance holds a slot for; resolves once it runs (or failed
   * to). `slotFreed` is called once the run is over and nothing of it is left.
   */
  async function launch(spec: LaunchSpec, slotFreed: () => void): Promise<RunStatus> {
    const run = new ActiveRun(spec, new RunEventLog(spec.run.id, 0, db, bus, logger), options.killGraceMs);
    running.add(run);

    const folder = await prepareRunFolder(spec, options.runsDir);
    const scratch = 'cwd' in folder && folder.scratch ? folder.cwd : null;
    let exit: Promise<ProcessExit>;
    if (run.ending) exit = Promise.resolve({ kind: 'spawn_failed', error: 'run ended before it started' });
    else if ('error' in folder) exit = Promise.resolve({ kind: 'spawn_failed', error: folder.error });
    else exit = (await startProcess(run, folder.cwd)).exited;

    const supervised = exit.then(async (result) => {
      try {
        run.clearTimers();
        await finish(run, run.outcome(result));
        // Whatever the runner left in its group is gone before its slot is free again.
        await run.process?.terminate();
      } finally {
        running.delete(run.id);
        if (spec.run.thread_id) await threadRunStopped(run.id);
        if (scratch) await removeScratchFolder(scratch);
        slotFreed();
      }
    });
    const tracked = supervised.catch((error: unknown) => {
      logger.error({ err: error, runId: run.id }, 'supervising a run failed');
    });
    supervising.add(tracked);
    void tracked.finally(() => supervising.delete(tracked));

    // A spawn failure ends the run right away; the caller then reports it as it really is.
    if (run.process && (await run.process.started)) return 'running';
    await supervised;
    return 'failed';
  }

  return {
    launch,

    owns: (runId: string) => running.has(runId),

    /** Cancels a run running here: its end is written at once, then its process group is stopped. */
    async cancel(runId: string): Promise<boolean> {
      const run = running.get(runId);
      if (!run) return false;
      const ended = await finish(run, { status: 'canceled', output: null, error: null });
      void run.process?.terminate();
      return ended;
    },

    /** Stops the processes of runs here that another instance ended (a cancel made there). */
    async stopEndedElsewhere(ids: string[] = running.ids()): Promise<void> {
      if (ids.length === 0) return;
      for (const runId of await findEndedAmong(db, ids)) {
        const run = running.get(runId);
        if (!run || run.ending) continue;
        run.ending = true;
        await run.log.close();
        void run.process?.terminate();
      }
    },

    /** Records the stops of thread runs the database could not take when their processes ended. */
    async retryThreadRunStops(): Promise<void> {
      for (const runId of [...unrecordedStops]) await threadRunStopped(runId);
    },

    /** Shutdown: runs still going fail as lost and their process groups stop, so no runner outlives the service. */
    async stopAll(): Promise<void> {
      for (const run of running.all()) {
        await finish(run, { status: 'failed', output: null, error: LOST_RUN_ERROR });
        void run.process?.terminate();
      }
      await Promise.all([...supervising]);
    },
  };
}

export type ActiveRuns = ReturnType<typeof createActiveRuns>;
