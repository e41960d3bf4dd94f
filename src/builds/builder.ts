import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { COMPLETE, organizationCache, toolCacheEnv } from './environment-cache.js';
import { ensureEnvironment } from './environments.js';
import { detectProject, type Project } from './project.js';
import { type CheckContext, checkEntrypoint } from './python-check.js';
import type { PythonTools } from './python-tools.js';
import { BuildFailure, type StepTools } from './run-step.js';
import { inspectBundle, unpackBundle } from './unpack.js';

/** Where a version's files live on this instance's disk. */
export function versionPaths(dataDir: string, versionId: string) {
  const home = path.resolve(dataDir, 'versions', versionId);
  return { home, project: path.join(home, 'project'), built: path.join(home, 'built.json') };
}

/** Where builds keep their files: DATA_DIR, and the environment cache (BUILD_CACHE_DIR); how Python installs. */
export interface BuildDirs {
  dataDir: string;
  cacheDir: string;
  python: PythonTools;
}

/** What a build runs its steps with; the folders they may write are the build's own. */
export type BuildTools = Omit<StepTools, 'writable'>;

/** A version built on this instance: what a run of it needs. */
export interface BuiltVersion {
  projectDir: string;
  /** The cached environment it uses, or null. */
  environmentDir: string | null;
  /** Folder put first on PATH, or null. */
  binDir: string | null;
  /** Absolute folders for PYTHONPATH. */
  importPaths: string[];
  /** What the first build's import check found of the entry point's schemas (stored with the version, not in built.json). */
  toolSchemas?: Record<string, unknown> | null;
}

/**
 * A run's environment for the built files (CONTRACTS §8): deployment variables, the version's env over them,
 * PATH with the environment's bin first, PYTHONPATH with the project's import paths.
 */
export function builtVersionEnv(
  built: BuiltVersion,
  values: Record<string, string>,
  versionEnv: Record<string, string>,
  runnerPath: string,
): Record<string, string> {
  const bins = [built.binDir, path.dirname(process.execPath)].filter((dir): dir is string => dir !== null);
  const env: Record<string, string> = { ...values, ...versionEnv, PATH: [...bins, runnerPath].join(':') };
  if (built.importPaths.length > 0) env.PYTHONPATH = built.importPaths.join(':');
  return env;
}

async function readBuiltFile(file: string): Promise<BuiltVersion | null> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as BuiltVersion;
  } catch {
    return null;
  }
}

/**
 * Whether a version's files read earlier are all still on disk: its project folder, and its environment
 * (which another instance sharing BUILD_CACHE_DIR, or an operator, may have removed).
 */
export function stillBuilt(built: BuiltVersion): boolean {
  if (!existsSync(built.projectDir)) return false;
  return !built.environmentDir || existsSync(path.join(built.environmentDir, COMPLETE));
}

/** The version's built files here, or null when missing or when their environment is gone from the cache. */
export async function readBuilt(dataDir: string, versionId: string): Promise<BuiltVersion | null> {
  const built = await readBuiltFile(versionPaths(dataDir, versionId).built);
  return built && stillBuilt(built) ? built : null;
}

/** The ids of the versions with files on this instance. */
export async function versionsOnDisk(dataDir: string): Promise<string[]> {
  return readdir(path.resolve(dataDir, 'versions')).catch(() => []);
}

/** The environments the versions built here use. */
export async function environmentsInUse(dataDir: string): Promise<Set<string>> {
  const used = new Set<string>();
  for (const id of await versionsOnDisk(dataDir)) {
    const built = await readBuiltFile(versionPaths(dataDir, id).built);
    if (built?.environmentDir) used.add(built.environmentDir);
  }
  return used;
}

/**
 * Builds a version's files on this instance: unpacks its bundle, gets its environment (from the
 * cache or made), links Node packages in, checks a Python entrypoint imports (given `check`: the
 * version's first build), and writes `built.json` last, so that a version counts as built here only
 * when all of it is. What a failed build made is removed.
 */
export async function buildVersionFiles(
  dirs: BuildDirs,
  versionId: string,
  bundle: { data: Buffer; orgId: string },
  tools: BuildTools,
  check?: CheckContext,
): Promise<BuiltVersion> {
  const paths = versionPaths(dirs.dataDir, versionId);
  const orgDir = organizationCache(dirs.cacheDir, bundle.orgId);
  const stepTools: StepTools = {
    ...tools,
    env: { ...tools.env, ...toolCacheEnv(orgDir) },
    // Not the version's folder: built.json, which crewd writes after the steps, lies there out of their reach.
    writable: [paths.project, orgDir],
  };
  await rm(paths.home, { recursive: true, force: true });
  let release = () => {};
  try {
    let project: Project;
    try {
      project = detectProject(await inspectBundle(bundle.data));
      await unpackBundle(bundle.data, paths.project);
    } catch (error) {
      throw new BuildFailure('unpacking the bundle', `unpacking the bundle failed: ${(error as Error).message}`);
    }
    tools.log(`unpacked into ${paths.project}`, 'stdout');
    // Both are bound into the sandbox of the build's steps, so they must be there.
    await mkdir(orgDir, { recursive: true });
    const place = { orgDir, dataDir: dirs.dataDir, python: dirs.python };
    const ensured = await ensureEnvironment(project, paths.project, place, stepTools);
    release = ensured.release;
    const environment = ensured.environment;
    const ownModules = path.join(paths.project, 'node_modules');
    if (environment.nodeModules && !existsSync(ownModules)) await symlink(environment.nodeModules, ownModules, 'dir');
    const built: BuiltVersion = {
      projectDir: paths.project,
      environmentDir: environment.home,
      binDir: environment.binDir,
      importPaths: project.importPaths.map((folder) => path.resolve(paths.project, folder)),
    };
    let toolSchemas: Record<string, unknown> | null = null;
    if (check) {
      const env = builtVersionEnv(built, check.values, project.env, check.runnerPath);
      toolSchemas = await checkEntrypoint(project, { ...built, env }, paths.home, tools);
    }
    await writeFile(paths.built, JSON.stringify(built));
    return { ...built, toolSchemas };
  } catch (error) {
    await rm(paths.home, { recursive: true, force: true });
    if (error instanceof BuildFailure) throw error;
    throw new BuildFailure('building', `building failed: ${(error as Error).message}`);
  } finally {
    release();
  }
}

export async function removeVersionFiles(dataDir: string, versionId: string): Promise<void> {
  await rm(versionPaths(dataDir, versionId).home, { recursive: true, force: true });
}
