import path from 'node:path';
import type { Logger } from 'pino';
import { watchOrganizations } from './access/organization-share.js';
import { createAccessService, organizationsRefused } from './access/service.js';
import { createForkServers } from './builds/fork-servers.js';
import { createBuildService } from './builds/service.js';
import { CACHE_CHANNEL, createInstanceCaches } from './cache/instance-caches.js';
import type { Config } from './config.js';
import { CRONS_CHANNEL, type CronTimings, createCronScheduler } from './crons/scheduler.js';
import { createCronService } from './crons/service.js';
import type { DatabaseHandle } from './db/connect.js';
import { createPgListener } from './db/pg-listener.js';
import { isDatabaseUnavailable } from './db/sqlstate.js';
import { createDeploymentService } from './deployments/service.js';
import { createStoredSecrets } from './deployments/stored-secrets.js';
import { createVariableService } from './deployments/variables.js';
import { createLocalEventBus } from './events/bus.js';
import { composeFeeds } from './events/composite-feed.js';
import { createPgEventFeed, RUN_EVENTS_CHANNEL } from './events/pg-feed.js';
import { createDirectSpawner } from './execution/direct-spawner.js';
import { createRunExecutor } from './execution/executor.js';
import { createInstanceLease, instanceName } from './execution/instance-lease.js';
import type { ProcessLauncher } from './execution/launcher.js';
import { Peers } from './execution/peers.js';
import { sandboxedLauncher } from './execution/sandboxed-launcher.js';
import { createSpawner } from './execution/spawner.js';
import { answerStoreCall } from './langgraph-api/store-calls.js';
import { createMetrics } from './metrics/registry.js';
import { createEndRecorder } from './run-record/end-recorder.js';
import type { RunObserver } from './run-record/observer.js';
import { countActiveRuns } from './run-record/repository.js';
import { createRunService } from './runs/service.js';
import { createSandbox, type Sandbox } from './sandbox/index.js';
import { createSignalHub } from './signals/hub.js';
import { createPgSignalTransport, SIGNALS_CHANNEL } from './signals/pg-transport.js';
import { createRunStreams } from './streams/streams.js';
import { createRowService } from './tables/row-service.js';
import { createTableService } from './tables/service.js';
import { composeTelemetry } from './telemetry/compose.js';
import { createRunMetrics } from './telemetry/run-metrics.js';
import { takeThreadForRun, threadRunEndHook, threadRunStopped, threadStateLoader } from './threads/run-hooks.js';
import { createThreadService } from './threads/service.js';
import { createUsageService } from './usage/service.js';
import { createIncomingWebhookService } from './webhooks/incoming-service.js';
import { webhookRunEndHook } from './webhooks/run-end-hook.js';
import { createWebhookService } from './webhooks/service.js';
import { createDeliveryWorker } from './webhooks/worker.js';

/** Intervals of runs and streams; tests shorten them, production uses the contract's values. */
export interface RunTimings {
  /** `: keepalive` comments on event streams. */
  keepaliveMs: number;
  /** Fallback poll of a stream without live events. */
  pollMs: number;
  /** SIGTERM → SIGKILL grace of a run's process group. */
  killGraceMs: number;
  /** Housekeeping tick (lease heartbeat, sweeps); default a third of INSTANCE_LEASE_SECONDS. */
  leaseTickMs?: number;
  /** False leaves the PostgreSQL feed of other instances' runs off (tests of the polling fallback). */
  crossInstanceFeed?: boolean;
}

export const DEFAULT_RUN_TIMINGS: RunTimings = { keepaliveMs: 15_000, pollMs: 2_000, killGraceMs: 5_000 };

export interface ServiceDependencies {
  config: Config;
  database: DatabaseHandle;
  logger: Logger;
  timings?: Partial<RunTimings> | undefined;
  /** Test knobs of the webhook delivery worker. */
  webhookWorker?: { pollIntervalMs?: number; concurrency?: number } | undefined;
  /** How runner processes are isolated; default: decided from RUNNER_SANDBOX and RUNNER_NETWORK. */
  sandbox?: Sandbox | undefined;
  /** How runner processes are started; default the spawner, in the sandbox. */
  launcher?: ProcessLauncher | undefined;
  /** Test knobs of the cron scheduler. */
  cronTimings?: Partial<CronTimings> | undefined;
}

/**
 * The composition root: every service built once, from its dependencies, in the order a run
 * uses them. Nothing is installed into a service after it is made.
 */
/** The launcher under the sandbox: the spawner helper unless RUNNER_SPAWNER=direct. */
function plainLauncher(config: Config, logger: Logger): ProcessLauncher {
  return config.runnerSpawner === 'direct' ? createDirectSpawner() : createSpawner(logger);
}

/** `folder`, when it lies outside `dataDir` (the sandbox hides DATA_DIR whole already). */
function outside(folder: string, dataDir: string): string[] {
  const relative = path.relative(path.resolve(dataDir), path.resolve(folder));
  return relative.startsWith('..') || path.isAbsolute(relative) ? [folder] : [];
}

export async function composeServices({ config, database, logger, ...options }: ServiceDependencies) {
  const { db } = database;
  const sandbox =
    options.sandbox ??
    (await createSandbox({
      mode: config.runnerSandbox,
      network: config.runnerNetwork,
      dataDir: config.dataDir,
      hidden: outside(config.buildCacheDir, config.dataDir),
      extraPaths: config.runnerExtraPaths,
      limits: config.runLimits,
      runnerPath: config.runnerPath,
      logger,
    }));
  const timings = { ...DEFAULT_RUN_TIMINGS, ...options.timings };
  const metrics = createMetrics(() => countActiveRuns(db));
  const runMetrics = createRunMetrics(metrics.registry);
  const observer: RunObserver = {
    runStarted: () => metrics.runsStarted.inc(),
    runFinished: (status) => metrics.runsFinished.inc({ status }),
    runEnded: (run) => runMetrics.runEnded(run),
    eventsRelayed: (count) => metrics.eventsRelayed.inc(count),
    streamOpened: () => metrics.openStreams.inc(),
    streamClosed: () => metrics.openStreams.dec(),
  };
  const crossInstanceFeed = timings.crossInstanceFeed !== false;
  // On PostgreSQL, one LISTEN connection made with every channel and who hears it (all made below;
  // nothing is heard before `start`).
  const listener = database.pool
    ? createPgListener({
        connection: database.pool.options,
        logger,
        channels: {
          [CACHE_CHANNEL]: (name) => caches.heard(name),
          [SIGNALS_CHANNEL]: (payload) => signalTransport?.heard(payload),
          [CRONS_CHANNEL]: () => cronScheduler.changedElsewhere(),
          ...(crossInstanceFeed ? { [RUN_EVENTS_CHANNEL]: (payload: string) => remote?.heard(payload) } : {}),
        },
        onConnectionChange: (connected) => {
          caches.connectionChanged();
          remote?.connectionChanged(connected);
        },
      })
    : null;
  const caches = createInstanceCaches({ db, backend: database.backend, listener });
  const secrets = createStoredSecrets(config.secretsKey);
  const telemetry = await composeTelemetry({ config, db, logger });
  // Whether the installation has several organizations, as every share of this instance's slots asks it (§12).
  const organizations = watchOrganizations(db);
  const access = createAccessService(db, caches, {
    organizationsRefused: organizationsRefused(sandbox.kind, config.runnerSandbox),
    organizationCreated: () => organizations.organizationCreated(),
  });
  const deployments = createDeploymentService(db, secrets, caches);
  const tables = createTableService(db);
  const rows = createRowService(db, {
    backend: database.backend,
    indexMinRows: config.tableIndexMinRows,
    maxBulkUpdateBytes: config.maxBulkUpdateBytes,
    maxBulkDeleteRows: config.maxBulkDeleteRows,
    logger,
  });

  const deliveryWorker = createDeliveryWorker({
    database,
    logger,
    timeoutSeconds: config.webhookTimeoutSeconds,
    retrySchedule: config.webhookRetrySchedule,
    allowPrivateUrls: config.webhookAllowPrivateUrls,
    onAttempt: (outcome) => metrics.deliveries.inc({ outcome }),
    openSecret: secrets.openWebhookSecret,
    organizations,
    ...options.webhookWorker,
  });
  const webhooks = createWebhookService(db, {
    caches,
    allowPrivateUrls: config.webhookAllowPrivateUrls,
    outbox: deliveryWorker.outbox,
    secrets,
  });

  // The run's path: this instance, its running runs, the event feeds, the end, the executor.
  const lease = createInstanceLease(db, {
    name: instanceName(config.dataDir),
    leaseSeconds: config.instanceLeaseSeconds,
  });
  const peers = new Peers(lease.id);
  const local = createLocalEventBus();
  const remote =
    listener && crossInstanceFeed
      ? createPgEventFeed({ listener, db, instanceId: () => lease.id, peersAlive: () => peers.alive, logger })
      : null;
  const bus = remote ? composeFeeds(local, remote) : local;
  const variables = createVariableService(db, config.secretsKey);
  // Runs and build steps start through the same launcher, in the same sandbox.
  const launcher =
    options.launcher ??
    sandboxedLauncher(plainLauncher(config, logger), sandbox, {
      runsDir: path.resolve(config.dataDir, 'runs'),
      logger,
    });
  const forkServers = createForkServers({
    launcher,
    logger,
    dataDir: config.dataDir,
    idleSeconds: config.pythonForkServerIdleSeconds,
    killGraceMs: timings.killGraceMs,
    isolation: { isolation: config.runIsolation, workerConcurrency: config.runWorkerConcurrency },
    // A version server narrows its environment's bwrap sandbox to its own version (versionview.py).
    environmentServers: sandbox.kind === 'bubblewrap',
  });
  const builds = createBuildService({
    db,
    organizations,
    logger,
    config,
    variables,
    bus,
    instanceId: lease.id,
    launcher,
    forkServers,
    secrets,
  });
  // What parts of a run tell each other, here and (on PostgreSQL) to the other instances; every subscriber is here.
  const signalTransport = listener ? createPgSignalTransport({ db, instanceId: lease.id, logger }) : null;
  const signals = createSignalHub({
    logger,
    transport: signalTransport,
    subscribers: {
      queued: [() => executor.pump()],
      threadReleased: [() => executor.pump()],
      stopRequested: [({ runId }) => executor.stopIfOwned(runId)],
      ended: [({ runId }) => executor.runEnded(runId)],
      instanceStarted: [({ instanceId }) => peers.hello(instanceId)],
    },
  });
  const endRecorder = createEndRecorder({
    db,
    bus,
    logger,
    observer,
    signals,
    hooks: [threadRunEndHook(signals), webhookRunEndHook(webhooks, deliveryWorker.outbox)],
  });
  const executor = createRunExecutor({
    db,
    organizations,
    bus,
    endRecorder,
    launcher,
    lease,
    peers,
    loadThreadState: threadStateLoader(db),
    threadRunStopped: threadRunStopped(db, signals),
    logger,
    maxConcurrentRuns: config.maxConcurrentRuns,
    maxRunsPerOrganization: config.maxRunsPerOrganization,
    openEnv: secrets.openEnv,
    dataDir: config.dataDir,
    runnerPath: config.runnerPath,
    killGraceMs: timings.killGraceMs,
    runLimits: config.runLimits,
    tickMs: timings.leaseTickMs ?? Math.max(200, (config.instanceLeaseSeconds * 1000) / 3),
    observer,
    signals,
    prepareVersion: builds.prepareVersion,
    usage: telemetry.usageWriter,
    tracer: telemetry.tracer,
    callHandler: (orgId, fields) => answerStoreCall(db, orgId, fields),
    // The servers' children are runs: they stop after them.
    afterRunsStopped: () => forkServers.stop(),
  });
  const runs = createRunService({
    db,
    deployments,
    executor,
    endRecorder,
    signals,
    threadGate: takeThreadForRun,
    cache: caches.runs,
    secrets,
    traceIds: telemetry.traceIds,
  });
  const threads = createThreadService({ db, runs, endRecorder, caches });
  const incomingWebhooks = createIncomingWebhookService(db, { publicUrl: config.publicUrl, runs });
  const cronScheduler = createCronScheduler({
    db,
    runs,
    logger,
    shared: listener !== null,
    timings: options.cronTimings,
  });
  const crons = createCronService(db, {
    changed: cronScheduler.changed,
    limits: { minIntervalSeconds: config.cronMinIntervalSeconds, maxPerOrganization: config.maxCronsPerOrganization },
  });
  const streams = createRunStreams({
    db,
    organizations,
    feed: executor.runFeed(bus),
    instanceId: () => lease.id,
    timings: { keepaliveMs: timings.keepaliveMs, pollMs: timings.pollMs },
    lifetimeMs: config.eventStreamTimeoutSeconds * 1000,
    logger,
    observer,
    limits: {
      total: config.maxEventStreams,
      perKey: config.maxEventStreamsPerKey,
      perOrganization: config.maxEventStreamsPerOrganization,
    },
  });

  return {
    services: {
      access,
      deployments,
      variables,
      builds,
      tables,
      rows,
      webhooks,
      incomingWebhooks,
      runs,
      threads,
      streams,
      caches,
      crons,
      usage: createUsageService(db),
    },
    metrics,
    executor,
    async start(): Promise<void> {
      // A database not up yet is not a reason to stay down (routes answer 503); the key is checked at the next start.
      await variables.checkKey().catch((error: unknown) => {
        if (!isDatabaseUnavailable(error)) throw error;
        logger.warn('the database cannot be reached: SECRETS_KEY was not checked against the stored variables');
      });
      // Values stored before SECRETS_KEY was set are sealed now.
      await secrets.sealStored(db).then(
        (sealed) => {
          if (sealed.variables + sealed.versions + sealed.webhooks > 0)
            logger.info({ sealed }, 'stored secrets sealed with SECRETS_KEY');
        },
        (error: unknown) => {
          if (!isDatabaseUnavailable(error)) throw error;
          logger.warn('the database cannot be reached: secrets stored in plain text are sealed at the next start');
        },
      );
      await listener?.start();
      remote?.start();
      await executor.start();
      // Builds left unfinished are taken up at the next start when the database is not up yet.
      await builds.start().catch((error: unknown) => {
        if (!isDatabaseUnavailable(error)) throw error;
        logger.warn('the database cannot be reached: unfinished builds are taken up at the next start');
      });
      await deliveryWorker.start();
      await cronScheduler.start();
    },
    /** Open streams end first, so the HTTP server can close. */
    closeStreams: () => streams.closeAll('The service is shutting down; reconnect with Last-Event-ID to continue'),
    /** Then the executor stops its runners, and the rest follows. */
    async stop(): Promise<void> {
      await cronScheduler.stop();
      await builds.stop();
      await executor.stop();
      await telemetry.stop();
      streams.stop();
      await remote?.stop();
      await deliveryWorker.stop();
      await rows.close();
      await listener?.stop();
    },
  };
}

export type Services = Awaited<ReturnType<typeof composeServices>>;
