import { existsSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { COMPLETE, claim, lock, pin } from './environment-cache.js';
import { environmentKey, PYTHON_RUNNER_DIR, PYTHON_RUNNER_PRESENT } from './environment-key.js';
import { python3Of, versionOf } from './host-tools.js';
import type { Project } from './project.js';
import { type PythonTools, uvForBuild } from './python-tools.js';
import { BuildFailure, runStep, type StepTools } from './run-step.js';
import { PROJECT_FILE_MAX_BYTES, readInside, readInsideIfThere, writeInside } from './safe-files.js';

export { PYTHON_RUNNER_DIR, PYTHON_RUNNER_PRESENT } from './environment-key.js';

/** A built environment: where runs find their interpreter and packages. */
export interface BuiltEnvironment {
  /** The environment's folder, or null when the project needs none. */
  home: string | null;
  /** Folder put first on PATH (a venv's bin), or null. */
  binDir: string | null;
  /** node_modules to link into the project, or null. */
  nodeModules: string | null;
}

/** Whether this machine's pip can install into another interpreter (`pip --python`, pip 22.3 and newer). */
async function pipTakesPython(python3: string, env: Record<string, string>): Promise<boolean> {
  const version = /pip (\d+)\.(\d+)/.exec(await versionOf([python3, '-m', 'pip', '--version'], env));
  if (!version) return false;
  const [major, minor] = [Number(version[1]), Number(version[2])];
  return major > 22 || (major === 22 && minor >= 3);
}

/** pip's or uv's arguments for everything the project needs, relative to the project folder. */
function installArguments(project: Project, projectDir: string): string[] {
  const python = project.python;
  if (!python) return [];
  return [
    ...python.requirementFiles.flatMap((file) => ['-r', path.join(projectDir, file)]),
    ...python.localPackages.map((folder) => path.join(projectDir, folder)),
    ...python.names,
  ];
}

async function sitePackages(venv: string): Promise<string> {
  const lib = path.join(venv, 'lib');
  const pythons = (await readdir(lib)).filter((name) => name.startsWith('python'));
  if (!pythons[0]) throw new Error(`no site-packages in ${venv}`);
  return path.join(lib, pythons[0], 'site-packages');
}

/** The commands that make the venv and install into it: with uv (uvForBuild), else with the machine's pip. */
async function pythonCommands(installs: string[], venv: string, place: CachePlace, tools: StepTools) {
  const python = path.join(venv, 'bin', 'python');
  // The interpreter of PATH's python3, as the cache key names it; with nothing to install, no installer is needed.
  const python3 = await python3Of(tools.env);
  if (installs.length === 0) return { commands: [[python3, '-m', 'venv', '--without-pip', venv]], readOnly: [] };
  const uv = await uvForBuild(place.python, tools);
  if (uv) {
    tools.log(`using uv (${uv.program})`, 'stdout');
    const commands = [
      [uv.program, 'venv', '--python', python3, venv],
      // Compiled as pip compiles what it installs: runs see the environment read-only and could not cache it.
      [uv.program, 'pip', 'install', '--compile-bytecode', '--python', python, ...installs],
    ];
    return { commands, readOnly: [uv.folder] };
  }
  tools.log(`using pip (${place.python.installer === 'pip' ? 'BUILD_PYTHON_INSTALLER=pip' : 'no uv'})`, 'stdout');
  if (await pipTakesPython(python3, tools.env)) {
    // The machine's pip installs into a venv made without its own pip: much faster than ensurepip.
    const commands = [
      [python3, '-m', 'venv', '--without-pip', venv],
      [python3, '-m', 'pip', '--python', python, 'install', ...installs],
    ];
    return { commands, readOnly: [] };
  }
  const commands = [
    [python3, '-m', 'venv', venv],
    [python, '-m', 'pip', 'install', ...installs],
  ];
  return { commands, readOnly: [] };
}

/**
 * A virtual environment with the project's dependencies and the crewd runner. The runner is put
 * on the import path with a .pth file rather than built as a wheel: it is standard library only,
 * and building it would cost seconds on every build.
 */
async function buildPython(
  project: Project,
  projectDir: string,
  venv: string,
  place: CachePlace,
  given: StepTools,
): Promise<void> {
  // uv trusts the machine's certificate store as pip does (a proxy's own authority included); its own settings win.
  const tools = { ...given, env: { UV_SYSTEM_CERTS: '1', UV_NATIVE_TLS: '1', ...given.env } };
  const installs = installArguments(project, projectDir);
  const { commands, readOnly } = await pythonCommands(installs, venv, place, tools);
  const [create, install] = commands;
  const stepTools = { ...tools, readOnly: [...(tools.readOnly ?? []), ...readOnly] };
  if (create) await runStep('creating the virtual environment', create, projectDir, stepTools);
  if (install) await runStep('installing the dependencies', install, projectDir, stepTools);
  if (PYTHON_RUNNER_PRESENT) {
    // The install step may have changed the venv: the file goes nowhere but into the organization's cache.
    await writeInside(place.orgDir, path.join(await sitePackages(venv), 'crewd-runner.pth'), `${PYTHON_RUNNER_DIR}\n`);
    tools.log(`crewd runner: ${PYTHON_RUNNER_DIR}`, 'stdout');
  }
}

async function buildNode(projectDir: string, target: string, tools: StepTools): Promise<void> {
  // Files of the bundle: read only when they are regular files inside the project folder.
  const manifest = await readInside(projectDir, 'package.json', PROJECT_FILE_MAX_BYTES);
  // Into the organization's folder only: a step of another build there may have made a link of the target's names.
  await writeInside(path.dirname(target), path.join(target, 'package.json'), manifest.data);
  const lock = await readInsideIfThere(projectDir, 'package-lock.json', PROJECT_FILE_MAX_BYTES);
  const locked = lock !== null;
  if (lock) await writeInside(path.dirname(target), path.join(target, 'package-lock.json'), lock.data);
  const command = ['npm', locked ? 'ci' : 'install', '--omit=dev', '--no-audit', '--no-fund'];
  // The npm beside the node that runs crewd (and runs the crew), whatever PATH names first.
  const env = { ...tools.env, PATH: `${path.dirname(process.execPath)}:${tools.env.PATH ?? ''}` };
  await runStep('installing the dependencies', command, target, { ...tools, env });
}

/** Where the environment cache is, and which installation uses it (its claims are by DATA_DIR). */
export interface CachePlace {
  /** The organization's folder of the cache. */
  orgDir: string;
  dataDir: string;
  python: PythonTools;
}

const building = new Map<string, Promise<void>>();

/** Builds the environment in place under its lock, unless another process finished it meanwhile. */
async function buildUnderLock(
  project: Project,
  projectDir: string,
  home: string,
  place: CachePlace,
  tools: StepTools,
): Promise<void> {
  let waiting = false;
  const release = await lock(home, () => {
    if (!waiting) tools.log('waiting for another process building the same environment', 'stdout');
    waiting = true;
    if (tools.signal?.aborted) return 'the service is shutting down';
    return Date.now() > tools.deadline ? 'timed out waiting for another build of the same environment' : null;
  }).catch((error: Error) => {
    throw new BuildFailure('waiting for the environment', `waiting for the environment: ${error.message}`);
  });
  try {
    if (existsSync(path.join(home, COMPLETE))) {
      await claim(home, place.dataDir);
      tools.log(`environment ${path.basename(home).slice(0, 12)} from the cache`, 'stdout');
      return;
    }
    await rm(home, { recursive: true, force: true });
    await mkdir(home, { recursive: true });
    try {
      if (project.python) await buildPython(project, projectDir, path.join(home, 'venv'), place, tools);
      else await buildNode(projectDir, home, tools);
      await claim(home, place.dataDir);
      await writeInside(place.orgDir, path.join(home, COMPLETE), new Date().toISOString());
    } catch (error) {
      await rm(home, { recursive: true, force: true });
      throw error;
    }
  } finally {
    await release();
  }
}

/**
 * The project's environment from the cache, built there first when missing. Built in place (a
 * venv's scripts name their own folder), and counted as there only once its marker file is written
 * last, so a failed build is cleared and made again. The environment stays pinned, safe from
 * cleanup, until the caller calls `release` (once the version's files name it).
 */
export async function ensureEnvironment(
  project: Project,
  projectDir: string,
  place: CachePlace,
  tools: StepTools,
): Promise<{ environment: BuiltEnvironment; release: () => void }> {
  const key = await environmentKey(project, projectDir, tools.env);
  if (!key) return { environment: { home: null, binDir: null, nodeModules: null }, release: () => {} };
  const home = path.join(place.orgDir, key);
  const environment: BuiltEnvironment = project.python
    ? { home, binDir: path.join(home, 'venv', 'bin'), nodeModules: null }
    : { home, binDir: path.join(home, 'node_modules', '.bin'), nodeModules: path.join(home, 'node_modules') };
  const release = pin(home);
  try {
    let pending = building.get(home);
    if (!pending) {
      pending = buildUnderLock(project, projectDir, home, place, tools).finally(() => building.delete(home));
      building.set(home, pending);
    }
    await pending;
  } catch (error) {
    release();
    throw error;
  }
  return { environment, release };
}
