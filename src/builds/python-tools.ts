import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { findOnPath } from '../program-search.js';
import { python3Of } from './host-tools.js';
import { BuildFailure, runStep, type StepTools } from './run-step.js';

/** How Python builds install: `uv` (from PATH, else installed once into crewd's build tools) or the machine's pip. */
export type PythonInstaller = 'uv' | 'pip';

/** How builds get their Python installer: BUILD_PYTHON_INSTALLER, and crewd's build tools folder (buildToolsDir). */
export interface PythonTools {
  installer: PythonInstaller;
  toolsDir: string;
}

/** The uv a build uses, and the folder a sandboxed step must be shown to run it. */
export interface UvProgram {
  program: string;
  folder: string;
}

/**
 * crewd's own build tools, at the root of BUILD_CACHE_DIR: written only by crewd's install of uv, never by
 * a build step of an organization, and shared by the installations that share the cache.
 */
export const buildToolsDir = (cacheDir: string) => path.join(path.resolve(cacheDir), 'build-tools');

/** Per cache folder, this process's one install of uv: its program, or why it could not be had. */
const installs = new Map<string, Promise<UvProgram | { reason: string }>>();

/**
 * `python3 -m pip install --target <folder> uv`: uv is a wheel holding one program. Installed into a folder
 * of its own, then renamed into place, so that two processes installing at once leave one whole copy. No
 * organization's cache is used, so no build of one can plant the program every organization's builds run.
 */
async function installUv(toolsDir: string, tools: StepTools): Promise<UvProgram> {
  const target = path.join(toolsDir, 'uv');
  const staging = `${target}.installing-${process.pid}-${randomBytes(4).toString('hex')}`;
  await mkdir(staging, { recursive: true });
  try {
    tools.log(`uv is not on PATH: installing it once into crewd's build tools (${toolsDir})`, 'stdout');
    const python3 = await python3Of(tools.env);
    const command = [python3, '-m', 'pip', 'install', '--no-cache-dir', '--only-binary=:all:', '--target', staging];
    await runStep('installing uv', [...command, 'uv'], staging, { ...tools, writable: [staging] });
    if (!existsSync(path.join(staging, 'bin', 'uv'))) throw new Error('pip installed uv without its uv program');
    await rename(staging, target).catch((error: NodeJS.ErrnoException) => {
      // Another process put its copy there first.
      if (!existsSync(path.join(target, 'bin', 'uv'))) throw error;
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return { program: path.join(target, 'bin', 'uv'), folder: toolsDir };
}

/**
 * The uv this build installs with: the one on PATH, else the one in crewd's build tools, installed there at
 * the first build that needs it; null when builds use pip (`installer`), or when uv could not be installed:
 * then the build log says why, and builds of this process use pip without trying again.
 */
export async function uvForBuild(python: PythonTools, tools: StepTools): Promise<UvProgram | null> {
  if (python.installer === 'pip') return null;
  const onPath = findOnPath('uv', tools.env.PATH ?? '');
  // Its folder is shown to the step: the service's PATH may name one the sandbox's view leaves out (~/.local/bin).
  if (onPath) return { program: onPath, folder: path.dirname(onPath) };
  const toolsDir = python.toolsDir;
  const installed = path.join(toolsDir, 'uv', 'bin', 'uv');
  if (existsSync(installed)) return { program: installed, folder: toolsDir };
  let install = installs.get(toolsDir);
  if (!install) {
    install = installUv(toolsDir, tools).catch((error: Error) => ({
      reason: error instanceof BuildFailure ? (error.message.split('\n').at(-1) ?? error.message) : error.message,
    }));
    installs.set(toolsDir, install);
  }
  const found = await install;
  if ('program' in found) return found;
  tools.log(`warning: uv could not be installed into crewd's build tools (${found.reason}): using pip`, 'stderr');
  return null;
}
