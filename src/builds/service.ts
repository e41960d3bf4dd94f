import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { type OrganizationsWatch, organizationShare, watchOrganizations } from '../access/organization-share.js';
import type { Config } from '../config.js';
import { ClaimedJobs, createClaimLoop, type Look } from '../db/claim-loop.js';
import type { Database } from '../db/types.js';
import * as deploymentsRepo from '../deployments/repository.js';
import type { BundleVersionQuery } from '../deployments/schemas.js';
import { toVersion, versionNotFound } from '../deployments/service.js';
import type { StoredSecrets } from '../deployments/stored-secrets.js';
import type { VariableService } from '../deployments/variables.js';
import { notFound } from '../errors.js';
import type { LocalEventBus } from '../events/bus.js';
import type { BuildEnd } from '../events/types.js';
import type { RunVersion, VersionLaunch } from '../execution/active-runs.js';
import { RunEventLog } from '../execution/event-log.js';
import type { ProcessLauncher } from '../execution/launcher.js';
import { DEFAULT_RUNNER_PATH } from '../execution/run-setup.js';
import { newId } from '../ids.js';
import { insertEvents } from '../run-record/repository.js';
import {
  type BuiltVersion,
  buildVersionFiles,
  builtVersionEnv,
  readBuilt,
  removeVersionFiles,
  stillBuilt,
} from './builder.js';
import { removeLeftovers, removeUnusedEnvironments } from './cleanup.js';
import { installationCache } from './environment-cache.js';
import { PYTHON_RUNNER_DIR, PYTHON_RUNNER_PRESENT } from './environments.js';
import type { ForkServers } from './fork-servers.js';
import { buildPath } from './host-tools.js';
import { detectProject } from './project.js';
import { buildToolsDir } from './python-tools.js';
import * as repo from './repository.js';
import { BuildFailure, type BuildLogger } from './run-step.js';
import { type ActiveBuild, buildFeed, buildStreamSource } from './stream-source.js';
import { inspectBundle } from './unpack.js';

export const CRASHED_BUILD_ERROR =
  'The build was interrupted: the crewd instance building it ended without finishing it (it crashed or was ' +
  'killed). Upload the bundle again to build it.';

export interface BuildServiceOptions {
  db: Kysely<Database>;
  /** Whether the installation has several organizations (the instance's one watch); made here if not given. */
  organizations?: OrganizationsWatch;
  logger: Logger;
  config: Pick<
    Config,
    | 'dataDir'
    | 'buildCacheDir'
    | 'maxConcurrentBuilds'
    | 'buildTimeoutSeconds'
    | 'buildEnv'
    | 'runnerPath'
    | 'buildPythonInstaller'
  >;
  /** The runners' launcher, in the sandbox: build steps start through it too (CONTRACTS §12). */
  launcher: ProcessLauncher;
  /** Seals a new version's env with SECRETS_KEY as it is stored. */
  secrets?: Pick<StoredSecrets, 'storedEnv'> | undefined;
  variables: VariableService;
  /** The run event bus (build logs share it). */
  bus: LocalEventBus;
  instanceId: string;
  /** Python crews' fork servers; without them every run imports its crew afresh. */
  forkServers?: ForkServers | undefined;
}

/**
 * Bundle versions (CONTRACTS §8): intake, the build queue (MAX_CONCURRENT_BUILDS at a time, each
 * within BUILD_TIMEOUT_SECONDS), build logs in the run event log, and what a run of a version
 * needs on this instance, built first when this instance has not built it yet.
 */
export function createBuildService(options: BuildServiceOptions) {
  const { db, logger, config, variables } = options;
  const active = new Map<string, ActiveBuild>();
  const queue: Array<{ versionId: string; orgId: string; previousInstance: string | null }> = [];
  /** Builds going on here, by organization: each holds at most its share of the slots. */
  const buildsByOrganization = new Map<string, number>();
  const organizations = options.organizations ?? watchOrganizations(db);
  const localBuilds = new Map<string, Promise<BuiltVersion>>();
  /** Versions whose built files were read here (builtHere). */
  const builtVersions = new Map<string, BuiltVersion>();
  let stopping = false;
  const stopped = new AbortController();
  const runnerPath = config.runnerPath ?? DEFAULT_RUNNER_PATH;
  const toolEnv = { ...config.buildEnv, PATH: buildPath(runnerPath) };
  const dirs = {
    dataDir: config.dataDir,
    cacheDir: installationCache(config.buildCacheDir, config.dataDir),
    python: { installer: config.buildPythonInstaller, toolsDir: buildToolsDir(config.buildCacheDir) },
  };

  const tools = (log: BuildLogger) => ({
    launcher: options.launcher,
    env: toolEnv,
    log,
    deadline: Date.now() + config.buildTimeoutSeconds * 1000,
    signal: stopped.signal,
  });

  const jobs = new ClaimedJobs(config.maxConcurrentBuilds, () => loop.wake());
  const loop = createClaimLoop({
    name: 'builds',
    logger,
    // Builds are queued here (uploads, builds left by a dead instance at start): only a wake looks.
    intervals: { idleMs: null, busyMs: 0, backoffMs: 250, maxBackoffMs: 5_000 },
    look: claimQueued,
  });

  /**
   * Claims queued builds, oldest first, while fewer than MAX_CONCURRENT_BUILDS go on, passing over those of an
   * organization that holds its share (organizationShare); a build whose claim fails is dropped (another instance has it).
   */
  async function claimQueued(): Promise<Look> {
    let claimed = 0;
    const share = organizationShare(config.maxConcurrentBuilds, await organizations.current());
    for (let index = 0; index < queue.length; ) {
      if (jobs.room <= 0) return { kind: 'full' };
      const { versionId, orgId, previousInstance } = queue[index] as (typeof queue)[number];
      if ((buildsByOrganization.get(orgId) ?? 0) >= share) {
        index++;
        continue;
      }
      queue.splice(index, 1);
      const won = await repo.claimBuild(db, versionId, options.instanceId, previousInstance);
      if (!won) continue; // taken by another instance, or no longer building
      claimed++;
      buildsByOrganization.set(orgId, (buildsByOrganization.get(orgId) ?? 0) + 1);
      const ended = build(versionId)
        .catch((error: unknown) => {
          logger.error({ err: error, versionId }, 'build failed unexpectedly');
        })
        .finally(() => {
          const left = (buildsByOrganization.get(orgId) ?? 1) - 1;
          if (left > 0) buildsByOrganization.set(orgId, left);
          else buildsByOrganization.delete(orgId);
          // A build passed over for its organization's share may go now, though a slot was free all along.
          loop.wake();
        });
      jobs.add(ended);
    }
    return { kind: 'done', claimed, dueAt: null };
  }

  function enqueue(versionId: string, orgId: string, previousInstance: string | null = null): void {
    queue.push({ versionId, orgId, previousInstance });
    loop.wake();
  }

  /** Builds one version here: its log is the version's build log, its end the version's status. */
  async function build(versionId: string): Promise<void> {
    const version = await repo.findVersionForBuild(db, versionId);
    const bundle = version?.bundle_sha256 ? await repo.findBundleData(db, version.bundle_sha256) : undefined;
    if (!version?.bundle_sha256) return;
    const bus = options.bus;
    const log = new RunEventLog(versionId, await repo.lastEventSeq(db, versionId), db, bus, logger);
    active.set(versionId, { orgId: version.org_id, log });
    let end: BuildEnd;
    let toolSchemas: Record<string, unknown> | null = null;
    try {
      if (!bundle) throw new BuildFailure('reading the bundle', 'reading the bundle failed: it is no longer stored');
      // The import check sees what a run would: the deployment's variables among it.
      const values = variables.open(version.deployment_id, await repo.findVariables(db, version.deployment_id));
      const built = await buildVersionFiles(
        dirs,
        versionId,
        { data: bundle.data, orgId: version.org_id },
        tools((message, stream) => log.appendFromRunner('build.log', { message, stream })),
        { values, runnerPath },
      );
      toolSchemas = built.toolSchemas ?? null;
      end = { status: 'ready', error: null };
    } catch (error) {
      const message = error instanceof BuildFailure ? error.message : `building failed: ${(error as Error).message}`;
      if (!(error instanceof BuildFailure)) logger.error({ err: error, versionId }, 'build failed');
      end = { status: 'failed', error: message };
    }
    const { unstored, nextSeq } = await log.close();
    if (unstored.length > 0) await insertEvents(db, unstored);
    if (stopping) {
      // Stopped with the service: still `building`, taken up again at the next start.
      active.delete(versionId);
      return;
    }
    const finished = await db.transaction().execute(async (trx) => {
      const row = await repo.finishBuild(trx, versionId, end.status, end.error, toolSchemas);
      if (row?.promote_to && end.status === 'ready') {
        await deploymentsRepo.setRunningVersion(trx, row.deployment_id, row.promote_to, versionId);
      }
      return row;
    });
    active.delete(versionId);
    if (!finished) {
      // Deleted while it was building: what the build left goes too.
      await repo.deleteEvents(db, versionId);
      await removeVersionFiles(config.dataDir, versionId);
      await removeUnusedEnvironments(dirs, logger);
      return;
    }
    bus.publish(versionId, { seq: nextSeq, json: '', end });
  }

  /** A build its instance left when it crashed: failed, not built again, as it may be what ended that instance. */
  async function failCrashedBuild(versionId: string, previousInstance: string): Promise<boolean> {
    if (!(await repo.failOrphanedBuild(db, versionId, previousInstance, CRASHED_BUILD_ERROR))) return false;
    logger.warn({ versionId }, 'failed a build left unfinished by an instance that crashed');
    await removeVersionFiles(config.dataDir, versionId);
    const end: BuildEnd = { status: 'failed', error: CRASHED_BUILD_ERROR };
    options.bus.publish(versionId, { seq: (await repo.lastEventSeq(db, versionId)) + 1, json: '', end });
    return true;
  }

  /**
   * The built files of a version on this instance, built here first (logging to `log`) when missing.
   * A version's files never change once built, so each is read from disk once (`forget` drops it),
   * and only checked to be still there before each run: removed, they are built again.
   */
  async function builtHere(version: Pick<RunVersion, 'id' | 'org_id' | 'bundle_sha256'>, log: BuildLogger) {
    const known = builtVersions.get(version.id);
    if (known) {
      if (stillBuilt(known)) return known;
      // Its files went: a fork server that imported them goes too.
      builtVersions.delete(version.id);
      options.forkServers?.forget(version.id);
    }
    const built = await readBuilt(config.dataDir, version.id);
    if (built) {
      builtVersions.set(version.id, built);
      return built;
    }
    let pending = localBuilds.get(version.id);
    if (!pending) {
      pending = (async () => {
        const bundle = version.bundle_sha256 ? await repo.findBundleData(db, version.bundle_sha256) : undefined;
        if (!bundle || !version.bundle_sha256) throw new Error('its bundle is no longer stored');
        log(`building version ${version.id} on this instance before its first run here`, 'stdout');
        return buildVersionFiles(dirs, version.id, { data: bundle.data, orgId: version.org_id }, tools(log));
      })().finally(() => localBuilds.delete(version.id));
      localBuilds.set(version.id, pending);
    }
    return pending;
  }

  return {
    streamSubject: { source: buildStreamSource, feed: buildFeed(options.bus, active) },

    /** Takes a bundle: refused at once when unsafe or unrecognised; else a `building` version, built in the background. */
    async upload(orgId: string, deploymentId: string, data: Buffer, query: BundleVersionQuery) {
      if (!(await deploymentsRepo.deploymentExists(db, orgId, deploymentId))) throw notFound('Deployment not found');
      const project = detectProject(await inspectBundle(data));
      const sha256 = createHash('sha256').update(data).digest('hex');
      const row = await db.transaction().execute(async (trx) => {
        await repo.insertBundle(trx, { sha256, size: data.length, data });
        const number = await deploymentsRepo.nextVersionNumber(trx, orgId, deploymentId);
        if (number === undefined) throw notFound('Deployment not found');
        const id = newId('ver');
        return deploymentsRepo.insertVersion(trx, {
          id,
          deployment_id: deploymentId,
          number,
          command: project.command,
          cwd: null,
          ...(options.secrets ? options.secrets.storedEnv(id, project.env) : { env: project.env }),
          timeout_seconds: query.timeout_seconds ?? project.timeoutSeconds,
          bundle: {
            runtime: project.runtime,
            entrypoint: project.entrypoint,
            sha256,
            size: data.length,
            promote_to: query.environment ?? null,
          },
        });
      });
      enqueue(row.id, orgId);
      return toVersion(row);
    },

    async bundle(orgId: string, deploymentId: string, versionId: string): Promise<Buffer> {
      const version = await repo.findVersionForBuild(db, versionId);
      if (!version || version.org_id !== orgId || version.deployment_id !== deploymentId) throw versionNotFound();
      const bundle = version.bundle_sha256 ? await repo.findBundleData(db, version.bundle_sha256) : undefined;
      if (!bundle) throw notFound('This version has no bundle: it is a command version');
      return bundle.data;
    },

    /**
     * A version was deleted: its files here go (a build still going on cleans up after itself),
     * then the environments no version uses any more.
     */
    async forget(versionId: string): Promise<void> {
      options.forkServers?.forget(versionId);
      builtVersions.delete(versionId);
      if (active.has(versionId)) return;
      await removeVersionFiles(config.dataDir, versionId);
      await removeUnusedEnvironments(dirs, logger);
    },

    /**
     * What a run of the version starts with (CONTRACTS §8): deployment variables, the version's env
     * over them, and for a bundle version its built files as cwd with their bin folder first on PATH,
     * built here first, with the build's output as `log` events of the run, when missing.
     */
    async prepareVersion(version: RunVersion, log: BuildLogger): Promise<VersionLaunch> {
      const values = variables.open(version.deployment_id, version.variables ?? []);
      const secrets = [...Object.values(values), ...Object.values(version.env)];
      if (version.source === 'command') return { cwd: null, env: { ...values, ...version.env }, secrets, readOnly: [] };
      if (version.status !== 'ready') throw new Error(`version ${version.id} is not ready: ${version.status}`);
      const built = await builtHere(version, log).catch((error: Error) => {
        throw new Error(`building the version on this instance failed: ${error.message}`);
      });
      const env = builtVersionEnv(built, values, version.env, runnerPath);
      // The crewd Python runner, which the environment imports from crewd's own folder, wherever that lies.
      const runner = built.environmentDir && PYTHON_RUNNER_PRESENT ? [PYTHON_RUNNER_DIR] : [];
      const readOnly = [
        path.dirname(built.projectDir),
        ...(built.environmentDir ? [built.environmentDir] : []),
        ...runner,
      ];
      const environment = built.environmentDir
        ? {
            folder: built.environmentDir,
            env: environmentVariables(built, version.env, runnerPath),
            readOnly: [built.environmentDir, ...runner],
          }
        : undefined;
      const place = { cwd: built.projectDir, env, secrets, readOnly, environment };
      const forked = options.forkServers?.forkedRun(version.id, version.command, place);
      return forked ? { ...place, ...forked } : place;
    },

    /**
     * Removes what deleted versions left here, then takes up builds an instance left unfinished
     * (this installation's previous life included).
     */
    async start(): Promise<void> {
      loop.start();
      await removeLeftovers(db, dirs, logger);
      let failed = 0;
      for (const orphan of await repo.findOrphanedBuilds(db, options.instanceId)) {
        if (orphan.crashed && orphan.build_instance_id) {
          if (await failCrashedBuild(orphan.id, orphan.build_instance_id)) failed++;
        } else enqueue(orphan.id, orphan.org_id, orphan.build_instance_id);
      }
      if (failed > 0) await removeUnusedEnvironments(dirs, logger);
    },

    /** Stops taking builds and ends those going on; they are taken up again at the next start. */
    async stop(): Promise<void> {
      stopping = true;
      queue.length = 0;
      stopped.abort();
      await loop.stop();
      await jobs.settled();
    },
  };
}

export type BuildService = ReturnType<typeof createBuildService>;

/**
 * What a version's environment server is started with (fork-servers.ts): the version's own env (its crewd.json)
 * without the import paths in its project, which only its version server sees; never the deployment's variables.
 */
function environmentVariables(
  built: BuiltVersion,
  versionEnv: Record<string, string>,
  runnerPath: string,
): Record<string, string> {
  const { PYTHONPATH, ...env } = builtVersionEnv(built, {}, versionEnv, runnerPath);
  const project = built.projectDir;
  const outside = (PYTHONPATH ?? '').split(':').filter((entry) => entry !== '' && !within(entry, project));
  return outside.length > 0 ? { ...env, PYTHONPATH: outside.join(':') } : env;
}

const within = (entry: string, folder: string) => entry === folder || entry.startsWith(`${folder}/`);
