import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Project } from './project.js';
import { type BuildLogger, runStep, type StepPlan } from './run-step.js';

const run = promisify(execFile);

/**
 * The crewd Python runner's package folder (runners/python of this repository), whether the service
 * runs from src/ or compiled from dist/src/; a build goes without it when it is not there.
 */
export const PYTHON_RUNNER_DIR =
  ['../../runners/python', '../../../runners/python']
    .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
    .find((folder) => existsSync(folder)) ?? fileURLToPath(new URL('../../runners/python', import.meta.url));

export interface ToolContext {
  /** The environment of build steps (PATH and package-tool settings). */
  env: Record<string, string>;
  log: BuildLogger;
  deadline: number;
  /** Aborted when the service stops: the step's processes are ended. */
  signal?: AbortSignal;
}

/** A built environment: where runs find their interpreter and packages. */
export interface BuiltEnvironment {
  /** The environment's folder, or null when the project needs none. */
  home: string | null;
  /** Folder put first on PATH (a venv's bin), or null. */
  binDir: string | null;
  /** node_modules to link into the project, or null. */
  nodeModules: string | null;
}

async function which(program: string, env: Record<string, string>): Promise<string | null> {
  for (const dir of (env.PATH ?? '').split(':')) {
    if (!dir) continue;
    const candidate = path.join(dir, program);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

const memo = new Map<string, Promise<string>>();
/** The version line of a tool, asked once per process: part of the cache key. */
function versionOf(command: string[], env: Record<string, string>): Promise<string> {
  const key = command.join(' ');
  let found = memo.get(key);
  if (!found) {
    const [program = '', ...args] = command;
    found = run(program, args, { env }).then(
      ({ stdout, stderr }) => `${stdout}${stderr}`.trim(),
      () => 'unavailable',
    );
    memo.set(key, found);
  }
  return found;
}

/** Names, sizes and times of the runner's files: changes to the runner make new environments. */
async function folderFingerprint(folder: string): Promise<string> {
  if (!existsSync(folder)) return 'absent';
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  const parts: string[] = [];
  for (const entry of entries) {
    if (!entry.isFile() || /__pycache__|\.pytest_cache|\.egg-info/.test(entry.parentPath)) continue;
    const file = path.join(entry.parentPath, entry.name);
    const info = await stat(file);
    parts.push(`${path.relative(folder, file)}:${info.size}:${info.mtimeMs}`);
  }
  return parts.sort().join('\n');
}

/**
 * The cache key of a project's environment: what determines it, and nothing else. The dependency
 * files and the runtime's version; a project installed as a package adds its whole bundle.
 */
export async function environmentKey(
  project: Project,
  projectDir: string,
  bundleSha256: string,
  env: Record<string, string>,
): Promise<string | null> {
  const hash = createHash('sha256');
  const file = async (name: string) => {
    const full = path.join(projectDir, name);
    hash.update(`\0${name}\0`);
    hash.update(existsSync(full) ? await readFile(full) : 'absent');
  };
  if (project.python) {
    const python = project.python;
    hash.update(`python\0${await versionOf(['python3', '--version'], env)}\0`);
    hash.update(await folderFingerprint(PYTHON_RUNNER_DIR));
    for (const name of python.requirementFiles) await file(name);
    hash.update(`\0names\0${python.names.join('\0')}`);
    if (python.localPackages.length > 0) hash.update(`\0bundle\0${bundleSha256}`);
    return hash.digest('hex');
  }
  if (project.nodeInstall) {
    hash.update(`node\0${process.version}\0${await versionOf(['npm', '--version'], env)}\0`);
    await file('package.json');
    await file('package-lock.json');
    return hash.digest('hex');
  }
  return null;
}

/** Whether this machine's pip can install into another interpreter (`pip --python`, pip 22.3 and newer). */
async function pipTakesPython(env: Record<string, string>): Promise<boolean> {
  const version = /pip (\d+)\.(\d+)/.exec(await versionOf(['python3', '-m', 'pip', '--version'], env));
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

/**
 * A virtual environment with the project's dependencies (uv when on PATH, else pip) and the crewd
 * runner. The runner is put on the import path with a .pth file rather than built as a wheel:
 * it is standard library only, and building it would cost seconds on every build.
 */
async function buildPython(project: Project, projectDir: string, venv: string, tools: ToolContext): Promise<void> {
  const step = (name: string, command: string[]) =>
    runStep(
      name,
      { command, cwd: projectDir, env: tools.env } satisfies StepPlan,
      tools.log,
      tools.deadline,
      tools.signal,
    );
  const installs = installArguments(project, projectDir);
  const uv = await which('uv', tools.env);
  if (uv) {
    await step('creating the virtual environment', [uv, 'venv', '--python', 'python3', venv]);
    if (installs.length > 0) {
      await step('installing the dependencies', [
        uv,
        'pip',
        'install',
        '--python',
        path.join(venv, 'bin', 'python'),
        ...installs,
      ]);
    }
  } else if (await pipTakesPython(tools.env)) {
    // The machine's pip installs into a venv made without its own pip: much faster than ensurepip.
    await step('creating the virtual environment', ['python3', '-m', 'venv', '--without-pip', venv]);
    if (installs.length > 0) {
      await step('installing the dependencies', [
        'python3',
        '-m',
        'pip',
        '--python',
        path.join(venv, 'bin', 'python'),
        'install',
        ...installs,
      ]);
    }
  } else {
    await step('creating the virtual environment', ['python3', '-m', 'venv', venv]);
    if (installs.length > 0) {
      await step('installing the dependencies', [
        path.join(venv, 'bin', 'python'),
        '-m',
        'pip',
        'install',
        ...installs,
      ]);
    }
  }
  if (existsSync(PYTHON_RUNNER_DIR)) {
    await writeFile(path.join(await sitePackages(venv), 'crewd-runner.pth'), `${PYTHON_RUNNER_DIR}\n`);
    tools.log(`crewd runner: ${PYTHON_RUNNER_DIR}`, 'stdout');
  }
}

async function buildNode(projectDir: string, target: string, tools: ToolContext): Promise<void> {
  await copyFile(path.join(projectDir, 'package.json'), path.join(target, 'package.json'));
  const locked = existsSync(path.join(projectDir, 'package-lock.json'));
  if (locked) await copyFile(path.join(projectDir, 'package-lock.json'), path.join(target, 'package-lock.json'));
  const command = ['npm', locked ? 'ci' : 'install', '--omit=dev', '--no-audit', '--no-fund'];
  const plan = { command, cwd: target, env: tools.env };
  await runStep('installing the dependencies', plan, tools.log, tools.deadline, tools.signal);
}

const building = new Map<string, Promise<void>>();
const COMPLETE = '.complete';

/**
 * The project's environment from the cache under `envsDir`, built there first when missing. Built
 * in place (a venv's scripts name their own folder), and counted as there only once its marker file
 * is written last, so a failed build is cleared and made again.
 */
export async function ensureEnvironment(
  project: Project,
  projectDir: string,
  bundleSha256: string,
  envsDir: string,
  tools: ToolContext,
): Promise<BuiltEnvironment> {
  const key = await environmentKey(project, projectDir, bundleSha256, tools.env);
  if (!key) return { home: null, binDir: null, nodeModules: null };
  const home = path.join(envsDir, key);
  const result: BuiltEnvironment = project.python
    ? { home, binDir: path.join(home, 'venv', 'bin'), nodeModules: null }
    : { home, binDir: path.join(home, 'node_modules', '.bin'), nodeModules: path.join(home, 'node_modules') };
  if (existsSync(path.join(home, COMPLETE))) {
    tools.log(`environment ${key.slice(0, 12)} from the cache`, 'stdout');
    return result;
  }
  let pending = building.get(key);
  if (!pending) {
    pending = (async () => {
      await rm(home, { recursive: true, force: true });
      await mkdir(home, { recursive: true });
      try {
        if (project.python) await buildPython(project, projectDir, path.join(home, 'venv'), tools);
        else await buildNode(projectDir, home, tools);
        await writeFile(path.join(home, COMPLETE), new Date().toISOString());
      } catch (error) {
        await rm(home, { recursive: true, force: true });
        throw error;
      }
    })().finally(() => building.delete(key));
    building.set(key, pending);
  }
  await pending;
  return result;
}
