import { existsSync } from 'node:fs';
import { readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ensureEnvironment, type ToolContext } from './environments.js';
import { detectProject, type Project } from './project.js';
import { BuildFailure } from './run-step.js';
import { inspectBundle, unpackBundle } from './unpack.js';

/** Where a version's files live on this instance's disk. */
export function versionPaths(dataDir: string, versionId: string) {
  const home = path.resolve(dataDir, 'versions', versionId);
  return { home, project: path.join(home, 'project'), built: path.join(home, 'built.json') };
}

/** Environments are shared by the versions of one organization only: a crew can never touch another's. */
export const environmentsDir = (dataDir: string, orgId: string) => path.resolve(dataDir, 'environments', orgId);

/** A version built on this instance: what a run of it needs. */
export interface BuiltVersion {
  projectDir: string;
  /** The cached environment it uses, or null. */
  environmentDir: string | null;
  /** Folder put first on PATH, or null. */
  binDir: string | null;
  /** Absolute folders for PYTHONPATH. */
  importPaths: string[];
}

export async function readBuilt(dataDir: string, versionId: string): Promise<BuiltVersion | null> {
  const { built } = versionPaths(dataDir, versionId);
  try {
    return JSON.parse(await readFile(built, 'utf8')) as BuiltVersion;
  } catch {
    return null;
  }
}

/**
 * Builds a version's files on this instance: unpacks its bundle, gets its environment (from the
 * cache or made), links Node packages in, and writes `built.json` last, so that a version counts as
 * built here only when all of it is. What a failed build made is removed.
 */
export async function buildVersionFiles(
  dataDir: string,
  versionId: string,
  bundle: { data: Buffer; sha256: string; orgId: string },
  tools: ToolContext,
): Promise<BuiltVersion> {
  const paths = versionPaths(dataDir, versionId);
  await rm(paths.home, { recursive: true, force: true });
  try {
    let project: Project;
    try {
      project = detectProject(await inspectBundle(bundle.data));
      await unpackBundle(bundle.data, paths.project);
    } catch (error) {
      throw new BuildFailure('unpacking the bundle', `unpacking the bundle failed: ${(error as Error).message}`);
    }
    tools.log(`unpacked into ${paths.project}`, 'stdout');
    const environment = await ensureEnvironment(
      project,
      paths.project,
      bundle.sha256,
      environmentsDir(dataDir, bundle.orgId),
      tools,
    );
    const ownModules = path.join(paths.project, 'node_modules');
    if (environment.nodeModules && !existsSync(ownModules)) await symlink(environment.nodeModules, ownModules, 'dir');
    const built: BuiltVersion = {
      projectDir: paths.project,
      environmentDir: environment.home,
      binDir: environment.binDir,
      importPaths: project.importPaths.map((folder) => path.resolve(paths.project, folder)),
    };
    await writeFile(paths.built, JSON.stringify(built));
    return built;
  } catch (error) {
    await rm(paths.home, { recursive: true, force: true });
    if (error instanceof BuildFailure) throw error;
    throw new BuildFailure('building', `building failed: ${(error as Error).message}`);
  }
}

export async function removeVersionFiles(dataDir: string, versionId: string): Promise<void> {
  await rm(versionPaths(dataDir, versionId).home, { recursive: true, force: true });
}
