import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { OrganizationsWatch } from '../access/organization-share.js';
import type { Database } from '../db/types.js';
import type { LocalEventBus } from '../events/bus.js';
import type { RunLimits } from '../run-limits.js';
import type { EndRecorder } from '../run-record/end-recorder.js';
import type { RunObserver } from '../run-record/observer.js';
import type { Signals } from '../signals/hub.js';
import type { RunTracer } from '../telemetry/tracer-types.js';
import type { UsageWriter } from '../telemetry/usage-writer.js';
import { createActiveRuns, type VersionPreparer } from './active-runs.js';
import { createHousekeeping } from './housekeeping.js';
import type { InstanceLease } from './instance-lease.js';
import type { ProcessLauncher } from './launcher.js';
import type { Peers } from './peers.js';
import { createRunPort } from './port.js';
import type { CallHandler } from './run-calls.js';
import { createRunQueue, type ThreadStateLoader } from './run-queue.js';

export interface ExecutorOptions {
  db: Kysely<Database>;
  bus: LocalEventBus;
  endRecorder: EndRecorder;
  launcher: ProcessLauncher;
  lease: InstanceLease;
  peers: Peers;
  loadThreadState: ThreadStateLoader;
  /** A thread run's process is gone (src/threads/run-hooks.ts). */
  threadRunStopped: (runId: string) => Promise<void>;
  logger: Logger;
  maxConcurrentRuns: number;
  /** MAX_RUNS_PER_ORGANIZATION (0: a share computed from maxConcurrentRuns). */
  maxRunsPerOrganization?: number | undefined;
  /** Whether the installation has several organizations (the instance's one watch; made for the queue if not given). */
  organizations?: OrganizationsWatch | undefined;
  /** Opens a version's env sealed with SECRETS_KEY. */
  openEnv?:
    | ((version: { id: string; env: Record<string, string>; env_encrypted?: boolean }) => Record<string, string>)
    | undefined;
  dataDir: string;
  runnerPath: string | undefined;
  killGraceMs: number;
  /** What one run may use (RUN_MAX_EVENTS, …). */
  runLimits?: RunLimits | undefined;
  /** Housekeeping tick (lease heartbeat, sweeps, queue poll). */
  tickMs: number;
  observer?: RunObserver | undefined;
  /** What the executor tells the rest: runs queued, this instance started (src/signals). */
  signals: Signals;
  prepareVersion?: VersionPreparer | undefined;
  /** Stores runs' LLM usage (src/telemetry). */
  usage?: UsageWriter | undefined;
  /** Each run's trace, when tracing is configured (src/telemetry). */
  tracer?: RunTracer | undefined;
  /** Answers runs' `store.call` lines for their organization (src/langgraph-api/store-calls.ts). */
  callHandler?: CallHandler | undefined;
  /** At shutdown, once no run is left and before the launcher stops (the Python fork servers stop here). */
  afterRunsStopped?: (() => Promise<void>) | undefined;
}

/**
 * Runs runs on this instance: the queue of slots and pending runs, the active runs' processes,
 * and the housekeeping that keeps several instances honest. The APIs over runs use its port
 * (`admit`, `cancel`); the composition root gives the signal hub's subscribers `pump`, `stopIfOwned` and
 * `runEnded`, and streams `runFeed`.
 */
export function createRunExecutor(options: ExecutorOptions) {
  const { lease, logger } = options;
  const runsDir = path.resolve(options.dataDir, 'runs');
  const activeRuns = createActiveRuns({ ...options, runsDir });
  const queue = createRunQueue({ ...options, instanceId: lease.id, activeRuns });
  const housekeeping = createHousekeeping({ ...options, activeRuns, queue });

  const port = createRunPort({ instanceId: lease.id, queue, activeRuns, signals: options.signals });

  return {
    ...port,

    /** Looks for pending runs now (a run was queued, or a thread released, here or elsewhere). */
    pump: () => queue.pump(),

    /** A run's end committed: new streams of it read the store, though its process may still be going. */
    runEnded: activeRuns.ended,

    /** The event feed as streams of runs see it: runs going on here come with what a new stream missed. */
    runFeed: activeRuns.runFeed,

    /** A run ended in the database while its process may run: stops the process if it runs here. */
    stopIfOwned(runId: string): void {
      if (!activeRuns.owns(runId)) return;
      activeRuns.stopEndedElsewhere([runId]).catch((error: unknown) => {
        logger.error({ err: error, runId }, 'stopping a run ended elsewhere failed; retrying on the next tick');
      });
    },

    async start(): Promise<void> {
      options.launcher.start();
      await mkdir(runsDir, { recursive: true });
      await housekeeping.start();
    },

    /** Stops taking runs; runs still going fail as lost. Queued runs stay pending for the next start. */
    async stop(): Promise<void> {
      await housekeeping.stop();
      queue.close();
      await activeRuns.stopAll();
      await options.afterRunsStopped?.();
      await options.endRecorder.retryUnrecorded().catch((error: unknown) => {
        logger.warn({ err: error }, 'ends of runs could not be recorded at shutdown; their instance is taken for dead');
      });
      await options.launcher.stop();
      await housekeeping.releaseLease();
    },

    /** Runs whose processes are alive here (for tests and the bench). */
    activeCount: () => activeRuns.size,
  };
}

export type Executor = ReturnType<typeof createRunExecutor>;
