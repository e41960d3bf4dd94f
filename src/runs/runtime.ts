import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { InstanceCaches } from '../cache/instance-caches.js';
import type { Config } from '../config.js';
import type { PgListener } from '../db/pg-listener.js';
import type { Database } from '../db/types.js';
import type { DeploymentService } from '../deployments/service.js';
import { createLocalEventBus } from '../events/bus.js';
import { composeFeeds } from '../events/composite-feed.js';
import { createPgEventFeed } from '../events/pg-feed.js';
import { createSupervisor, type VersionPreparer } from '../supervisor/supervisor.js';
import { createWakeUps } from '../supervisor/wake-ups.js';
import { createThreadService } from '../threads/service.js';
import { createRunLifecycle } from './lifecycle.js';
import type { RunObserver } from './observer.js';
import { createRunService } from './service.js';
import { createRunStreams } from './streams.js';

/** Intervals of runs and streams; tests shorten them, production uses the contract's values. */
export interface RunTimings {
  /** `: keepalive` comments on event streams. */
  keepaliveMs: number;
  /** Fallback poll of a stream without live events. */
  pollMs: number;
  /** SIGTERM → SIGKILL grace of a run's process group. */
  killGraceMs: number;
  /** Supervisor heartbeat and sweep; default a third of INSTANCE_LEASE_SECONDS. */
  leaseTickMs?: number;
  /** False leaves the PostgreSQL feed of other instances' runs off (tests of the polling fallback). */
  crossInstanceFeed?: boolean;
}

export const DEFAULT_RUN_TIMINGS: RunTimings = { keepaliveMs: 15_000, pollMs: 2_000, killGraceMs: 5_000 };

/** Everything runs and threads need, wired once: bus, supervisor, services, streams. */
export function createRunRuntime(options: {
  db: Kysely<Database>;
  config: Config;
  logger: Logger;
  deployments: DeploymentService;
  timings?: Partial<RunTimings> | undefined;
  observer?: RunObserver | undefined;
  caches: InstanceCaches;
  /** On PostgreSQL: the notification connection that carries other instances' run events. */
  listener: PgListener | null;
  /** builds (CONTRACTS §8): what a run of a version starts with; lead: port with the supervisor. */
  prepareVersion?: VersionPreparer;
}) {
  const { db, config, logger, deployments } = options;
  const observer = options.observer ?? {};
  const timings = { ...DEFAULT_RUN_TIMINGS, ...options.timings };
  const local = createLocalEventBus();
  const remote =
    options.listener && timings.crossInstanceFeed !== false
      ? createPgEventFeed({
          listener: options.listener,
          db,
          instanceId: () => supervisor.instanceId,
          peersAlive: () => supervisor.peersAlive,
          logger,
        })
      : null;
  const bus = remote ? composeFeeds(local, remote) : local;
  const lifecycle = createRunLifecycle(db, logger, observer);
  const supervisor = createSupervisor({
    db,
    bus,
    lifecycle,
    logger,
    maxConcurrentRuns: config.maxConcurrentRuns,
    dataDir: config.dataDir,
    runnerPath: config.runnerPath,
    instanceLeaseSeconds: config.instanceLeaseSeconds,
    timings: { killGraceMs: timings.killGraceMs, leaseTickMs: timings.leaseTickMs },
    observer,
    wakeUps: createWakeUps(db, options.listener, logger),
    prepareVersion: options.prepareVersion,
  });
  const runs = createRunService({ db, deployments, supervisor, lifecycle, bus, cache: options.caches.runs });
  const threads = createThreadService({ db, runs, supervisor, caches: options.caches });
  const streams = createRunStreams({
    db,
    feed: bus,
    instanceId: () => supervisor.instanceId,
    timings: { keepaliveMs: timings.keepaliveMs, pollMs: timings.pollMs },
    lifetimeMs: config.eventStreamTimeoutSeconds * 1000,
    logger,
    observer,
  });

  return {
    bus,
    supervisor,
    runs,
    threads,
    streams,
    start: async () => {
      remote?.start();
      await supervisor.start();
    },
    /** Open streams end first, so the HTTP server can close; then the supervisor stops its runners. */
    closeStreams: () => streams.closeAll('The service is shutting down; reconnect with Last-Event-ID to continue'),
    stop: async () => {
      await supervisor.stop();
      streams.stop();
      await remote?.stop();
    },
  };
}

export type RunRuntime = ReturnType<typeof createRunRuntime>;
