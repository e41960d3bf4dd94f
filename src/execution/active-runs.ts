import path from 'node:path';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import type { LocalEventBus } from '../events/bus.js';
import type { RunEventFeed } from '../events/types.js';
import { DEFAULT_RUN_LIMITS, type RunLimits } from '../run-limits.js';
import type { EndRecorder, OwnEnd, RunOutcome } from '../run-record/end-recorder.js';
import type { RunObserver } from '../run-record/observer.js';
import { findEndedAmong, insertEventsWhileRunning } from '../run-record/repository.js';
import type { LaunchSpec, RunStatus } from '../run-record/types.js';
import type { RunTracer } from '../telemetry/tracer-types.js';
import type { UsageWriter } from '../telemetry/usage-writer.js';
import { ActiveRun } from './active-run.js';
import { type HandedOver, RunEventLog } from './event-log.js';
import { type ForkServerAddress, forkServerFirst } from './fork-server-launcher.js';
import { LOST_RUN_ERROR } from './instance-lease.js';
import type { ProcessLauncher } from './launcher.js';
import { type ProcessExit, startRunnerProcess } from './process-runner.js';
import { missingProgram } from './program-check.js';
import { type CallHandler, RunCalls } from './run-calls.js';
import { prepareRunFolder, removeScratchFolder, runnerEnvironment } from './run-setup.js';
import { RunningRuns } from './running-runs.js';

/**
 * The launcher a run falls back on when its version's fork server cannot take it: the program is checked
 * (program-check.ts) before that start only. A run the server takes needs no look-up on PATH: the server runs that
 * program already (the look-up was most of the service's file `stat`s per run, about 0.9 ms of CPU).
 */
function checkedFirst(launcher: ProcessLauncher, missing: () => string | null): ProcessLauncher {
  return {
    start: () => launcher.start(),
    stop: () => launcher.stop(),
    launch(request) {
      const why = missing();
      return why ? Promise.resolve({ error: why }) : launcher.launch(request);
    },
  };
}

/** What a run of a version starts with, beyond the runner protocol's own variables. */
export interface VersionLaunch {
  /** The built project folder, or null for the version's own `cwd` (command versions). */
  cwd: string | null;
  /** Deployment variables, then the version's env, with PATH (and PYTHONPATH) for the built files. */
  env: Record<string, string>;
  /** Built files a sandbox mounts read-only. */
  readOnly: string[];
  /** The values of the deployment variables and the version's env (secrets: never logged nor traced). */
  secrets: string[];
  /** The version's fork server, asked for the run before the version's command is started. */
  forkSocket?: ForkServerAddress;
}

/** The version a run starts, as read with the run (its deployment's variables included). */
export type RunVersion = LaunchSpec['version'] & { id: string; deployment_id: string; org_id: string };

/**
 * Plans a run of a version (src/builds): a bundle's built files as its folder (built here first,
 * logging to the run), the deployment's variables under the version's env, PATH.
 */
export type VersionPreparer = (
  version: RunVersion,
  log: (message: string, stream: 'stdout' | 'stderr') => void,
) => Promise<VersionLaunch>;

/** Where a run's process starts, and what else of the disk it may read. */
interface RunPlace {
  spec: LaunchSpec;
  command: string[];
  /** A Python crew's fork server, tried first (fork-server-launcher.ts). */
  forkSocket: ForkServerAddress | null;
  cwd: string;
  /** The folder is the run's own scratch folder: writable, removed with the run. */
  scratch: boolean;
  readOnly: string[];
}

export interface ActiveRunsOptions {
  db: Kysely<Database>;
  bus: LocalEventBus;
  endRecorder: EndRecorder;
  launcher: ProcessLauncher;
  logger: Logger;
  /** Where scratch folders of runs without a `cwd` go. */
  runsDir: string;
  runnerPath: string | undefined;
  /** Between SIGTERM and SIGKILL of a run's process group (CONTRACTS §6: 5 s). */
  killGraceMs: number;
  /** RUN_MAX_EVENTS and the other run limits, for the runs' errors; default DEFAULT_RUN_LIMITS. */
  runLimits?: RunLimits | undefined;
  /** A thread run's process is gone: its thread's next run, if it waits for that, may start. */
  threadRunStopped: (runId: string) => Promise<void>;
  observer?: RunObserver | undefined;
  /** Without it a version runs as stored (tests of the run path alone). */
  prepareVersion?: VersionPreparer | undefined;
  /** Stores runs' LLM usage as calls arrive and hands the final sum to their end (src/telemetry). */
  usage?: UsageWriter | undefined;
  /** Set when tracing is configured: each run's trace, exported at its end (src/telemetry). */
  tracer?: RunTracer | undefined;
  /** Answers runs' `store.call` lines for their organization (run-calls.ts); without it they go unanswered. */
  callHandler?: CallHandler | undefined;
}

/**
 * crewd's Python runner for a LangGraph graph (`python -m crewd_runner --graph …`, any python): it reads one line of
 * request and takes answers to its store calls after it. Other runners read their input to its end, so their
 * standard input closes after the request (docs/runner-protocol.md).
 */
export function takesAnswers(command: readonly string[]): boolean {
  const [program, flag, module] = command;
  return (
    /^python[0-9.]*$/.test(path.basename(program ?? '')) &&
    flag === '-m' &&
    module === 'crewd_runner' &&
    command.includes('--graph')
  );
}

/**
 * The runs whose processes run here: starts each one's process, ends it however it ends (its
 * exit, a cancel, shutdown), and frees its slot once nothing of it is left.
 */
export function createActiveRuns(options: ActiveRunsOptions) {
  const { db, bus, endRecorder, logger } = options;
  const running = new RunningRuns();
  /** Runs' supervision until their slot is free, so shutdown can wait for all of them. */
  const supervising = new Set<Promise<void>>();

  /**
   * Writes the run's end, once; later output and exits change nothing. A call after the first
   * waits for the first one's end and answers `lost` (not this call's).
   */
  async function finish(run: ActiveRun, outcome: RunOutcome): Promise<OwnEnd> {
    if (run.ending) {
      await run.finished;
      return 'lost';
    }
    run.ending = true;
    run.calls?.close();
    run.endedAs = outcome.status;
    run.finished = record(run, outcome);
    return run.finished;
  }

  async function record(run: ActiveRun, outcome: RunOutcome): Promise<OwnEnd> {
    const { unstored, nextSeq } = await run.log.close();
    const usage = options.usage?.final(run.id, run.usage);
    const recorded = await endRecorder.recordOwnEnd({
      runId: run.id,
      from: ['running'],
      outcome: usage ? { ...outcome, usage } : outcome,
      seq: nextSeq,
      unstored,
      identity: run.identity,
    });
    run.trace?.end({ status: outcome.status, error: outcome.error, usage: usage ?? null, secrets: run.secrets });
    return recorded;
  }

  /** The version's launch plan applied to the spec, and the run's folder made. */
  async function placeRun(run: ActiveRun): Promise<RunPlace | { error: string }> {
    let spec = run.spec;
    let readOnly: string[] = [];
    let forkSocket: ForkServerAddress | null = null;
    if (options.prepareVersion && (spec.version.source !== 'command' || spec.version.variables !== null)) {
      try {
        const { version_id: id, deployment_id, org_id } = spec.run;
        const plan = await options.prepareVersion({ ...spec.version, id, deployment_id, org_id }, (message, stream) =>
          run.log.append('log', { message, stream }),
        );
        spec = { ...spec, version: { ...spec.version, cwd: plan.cwd ?? spec.version.cwd, env: plan.env } };
        readOnly = plan.readOnly;
        forkSocket = plan.forkSocket ?? null;
        run.secrets = plan.secrets;
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) };
      }
    }
    const folder = await prepareRunFolder(spec, options.runsDir);
    if ('error' in folder) return folder;
    return { spec, command: spec.version.command, forkSocket, cwd: folder.cwd, scratch: folder.scratch, readOnly };
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
  async function startProcess(run: ActiveRun, place: RunPlace): Promise<{ exited: Promise<ProcessExit> }> {
    const { spec, cwd } = place;
    const env = runnerEnvironment(spec, options.runnerPath);
    const missing = () => missingProgram(place.command, cwd, env.PATH ?? '');
    if (!place.forkSocket) {
      const why = missing();
      if (why) return { exited: Promise.resolve({ kind: 'spawn_failed', error: why }) };
    }
    const launcher = place.forkSocket
      ? forkServerFirst(place.forkSocket, checkedFirst(options.launcher, missing))
      : options.launcher;
    const answers = takesAnswers(place.command);
    const request = JSON.stringify({
      run_id: spec.run.id,
      input: spec.input,
      thread: spec.thread,
      command: spec.command,
    });
    const proc = startRunnerProcess(
      launcher,
      {
        command: place.command,
        cwd,
        env,
        // A runner that takes answers reads one line of request, then its answers, on standard input.
        stdin: answers ? `${request}\n` : request,
        keepStdinOpen: answers,
        // Only a scratch folder is writable: a version's own cwd may lie anywhere, DATA_DIR included.
        confinement: { writable: place.scratch ? [cwd] : [], readOnly: place.readOnly },
      },
      {
        killGraceMs: options.killGraceMs,
        onMessage: (message) => {
          if (message.kind === 'event' && !run.ending) run.trace?.event(message.type, message.data);
          run.onMessage(message);
          if (message.kind === 'event' && message.llmCall && !run.ending) options.usage?.called(run.id, run.usage);
        },
      },
    );
    run.process = proc;
    if (options.callHandler) {
      // The run's own organization: a line never names the one its call reaches.
      run.calls = new RunCalls(spec.run.org_id, options.callHandler, (line) => proc.answer(line), logger);
    }
    if (await proc.started) {
      options.observer?.runStarted?.();
      run.log.append('run.started', { entrypoint: spec.version.command.join(' ') });
      if (spec.version.timeout_seconds !== null) run.armTimeout(spec.version.timeout_seconds);
    }
    return { exited: proc.exited };
  }

  /**
   * Starts the process of a run this instance holds a slot for. The run is registered before this
   * returns; `started` resolves once its process runs (or failed to), `gone` once the run is over
   * and nothing of it is left (its slot is free then).
   */
  function launch(spec: LaunchSpec): { started: Promise<RunStatus>; gone: Promise<void> } {
    const limits = options.runLimits ?? DEFAULT_RUN_LIMITS;
    // The run enforces RUN_MAX_EVENTS on the log's count (ActiveRun): the log drops nothing itself. It stores only
    // while the run is running: an end made elsewhere (a cancel, a run displacing it) is numbered after its events.
    const log = new RunEventLog(spec.run.id, 0, db, bus, logger, null, insertEventsWhileRunning);
    const run = new ActiveRun(spec, log, options.killGraceMs, limits);
    run.trace = options.tracer?.start(spec) ?? null;
    running.add(run);
    let gone = () => {};
    const left = new Promise<void>((resolve) => (gone = resolve));
    return { started: supervise(run, gone), gone: left };
  }

  /** Places and starts the run's process, and supervises it to its end; `gone` is called once nothing of it is left. */
  async function supervise(run: ActiveRun, gone: () => void): Promise<RunStatus> {
    const { spec } = run;

    const place = await placeRun(run);
    const scratch = 'cwd' in place && place.scratch ? place.cwd : null;
    let exit: Promise<ProcessExit>;
    if (run.ending) exit = Promise.resolve({ kind: 'spawn_failed', error: 'run ended before it started' });
    else if ('error' in place) exit = Promise.resolve({ kind: 'spawn_failed', error: place.error });
    else exit = (await startProcess(run, place)).exited;

    const supervised = exit.then(async (result) => {
      try {
        run.clearTimers();
        await finish(run, run.outcome(result));
        // Whatever the runner left in its group is gone before its slot is free again.
        await run.process?.terminate();
      } finally {
        running.delete(run.id);
        // No process of the run is left: its slot is free; the rest is bookkeeping.
        gone();
        if (spec.run.thread_id) await threadRunStopped(run.id);
        if (scratch) await removeScratchFolder(scratch);
      }
    });
    const tracked = supervised.catch((error: unknown) => {
      logger.error({ err: error, runId: run.id }, 'supervising a run failed');
    });
    supervising.add(tracked);
    void tracked.finally(() => supervising.delete(tracked));

    // A spawn failure (or a cancel before the start) ends the run right away; the caller then reports it as it is.
    if (run.process && (await run.process.started)) return 'running';
    await supervised;
    return run.endedAs ?? 'failed';
  }

  return {
    launch,

    owns: (runId: string) => running.has(runId),

    /**
     * Cancels a run running here: its end is written at once, then its process group is stopped.
     * Resolves once the run's end is written (or kept for a later tick), whoever wrote it.
     */
    async cancel(runId: string): Promise<'canceled' | 'ended' | 'not-here'> {
      const run = running.get(runId);
      if (!run) return 'not-here';
      const ended = await finish(run, { status: 'canceled', output: null, error: null });
      void run.process?.terminate();
      return ended === 'lost' ? 'ended' : 'canceled';
    },

    /**
     * The events of a run whose process runs here, handed to an end someone else makes here (a run
     * displacing it), so that end stores them and numbers its final event after them; null when its
     * process does not run here. Once that end commits, its process is stopped as for any end made
     * elsewhere (`stopEndedElsewhere`, on the `stopRequested` signal).
     */
    handOver(runId: string): HandedOver | null {
      return running.get(runId)?.log.handOver() ?? null;
    },

    /**
     * Stops the processes of runs here that another instance ended (a cancel made there). From then on the run's
     * new streams read the store, and those that followed it live and missed that instance's announcement of the
     * end get it (they complete now, not at their first quiet look).
     */
    async stopEndedElsewhere(ids: string[] = running.ids()): Promise<void> {
      if (ids.length === 0) return;
      for (const runId of await findEndedAmong(db, ids)) {
        const run = running.get(runId);
        if (!run || run.ending) continue;
        run.ending = true;
        run.calls?.close();
        // An end made here (a run displacing this one) was published here when it committed.
        if (!run.ended) {
          running.ended(runId);
          endRecorder.relayEndedElsewhere(runId).catch((error: unknown) => {
            logger.warn({ err: error, runId }, 'could not tell streams of the end of a run ended elsewhere');
          });
        }
        run.finished = run.log.close().then(() => 'lost' as const);
        await run.finished;
        void run.process?.terminate();
      }
    },

    /** Records the stops of thread runs the database could not take when their processes ended. */
    async retryThreadRunStops(): Promise<void> {
      for (const runId of [...unrecordedStops]) await threadRunStopped(runId);
    },

    /** Runs whose processes are alive here. */
    get size(): number {
      return running.size;
    },

    /** The run's end is committed (the `ended` signal). */
    ended: (runId: string) => running.ended(runId),

    /** The event feed for streams of runs, with what they missed of runs going on here. */
    runFeed: (feed: RunEventFeed) => running.runFeed(feed),

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
