import { createHash, type Hash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLE_LIMITS } from './bundle-tree.js';
import { versionOf } from './host-tools.js';
import type { Project } from './project.js';
import { PROJECT_FILE_MAX_BYTES, readInside, readInsideIfThere } from './safe-files.js';

/**
 * The crewd Python runner's package folder (runners/python of this repository), whether the service
 * runs from src/ or compiled from dist/src/; a build goes without it when it is not there.
 */
export const PYTHON_RUNNER_DIR =
  ['../../runners/python', '../../../runners/python']
    .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
    .find((folder) => existsSync(folder)) ?? fileURLToPath(new URL('../../runners/python', import.meta.url));

/** Whether this installation carries the runner: looked at once, as the folder is part of the installation. */
export const PYTHON_RUNNER_PRESENT = existsSync(PYTHON_RUNNER_DIR);

/** Every file's path, mode and contents: a project installed as a package is its whole folder. */
async function hashTree(hash: Hash, folder: string): Promise<void> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
  for (const file of files) {
    const relative = path.relative(folder, file);
    const { mode, data } = await readInside(folder, relative, BUNDLE_LIMITS.maxUnpackedBytes);
    hash.update(`\0${relative}\0${mode & 0o111 ? 'x' : '-'}\0`);
    hash.update(data);
  }
}

/**
 * The cache key of a project's environment: what determines it, and nothing else. The dependency
 * files and the runtime's version; a project installed as a package adds its files. The Python
 * runner is only named in the environment (a .pth file with its folder), so its folder is part of
 * the key and its contents are not: editing the runner does not make new environments.
 */
export async function environmentKey(
  project: Project,
  projectDir: string,
  env: Record<string, string>,
): Promise<string | null> {
  const hash = createHash('sha256');
  const file = async (name: string) => {
    hash.update(`\0${name}\0`);
    hash.update((await readInsideIfThere(projectDir, name, PROJECT_FILE_MAX_BYTES))?.data ?? 'absent');
  };
  if (project.python) {
    const python = project.python;
    hash.update(`python\0${await versionOf(['python3', '--version'], env)}\0runner\0${PYTHON_RUNNER_DIR}\0`);
    for (const name of python.requirementFiles) await file(name);
    hash.update(`\0names\0${python.names.join('\0')}`);
    if (python.localPackages.length > 0) await hashTree(hash.update('\0tree\0'), projectDir);
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
