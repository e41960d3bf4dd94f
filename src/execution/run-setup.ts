import { mkdirSync, statSync } from 'node:fs';
import { rm, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { LaunchSpec } from '../run-record/types.js';

export const DEFAULT_RUNNER_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** A runner's environment (CONTRACTS §6): PATH, the version's env, the CREWD_* variables; nothing of crewd's own. */
export function runnerEnvironment(spec: LaunchSpec, runnerPath: string | undefined): Record<string, string> {
  return {
    PATH: runnerPath ?? DEFAULT_RUNNER_PATH,
    ...spec.version.env,
    CREWD_RUN_ID: spec.run.id,
    CREWD_DEPLOYMENT_ID: spec.run.deployment_id,
    CREWD_VERSION_ID: spec.run.version_id,
    CREWD_THREAD_ID: spec.run.thread_id ?? '',
  };
}

export type RunFolder = { cwd: string; scratch: boolean } | { error: string };

/** Synchronous, as the mkdir below: a stat on every run's start costs less than a trip through the thread pool. */
function isFolder(folder: string): boolean {
  try {
    return statSync(folder, { throwIfNoEntry: false })?.isDirectory() === true;
  } catch {
    return false;
  }
}

/** The version's `cwd`, or else a fresh scratch folder `<runsDir>/<run id>` that goes with the run. */
export async function prepareRunFolder(spec: LaunchSpec, runsDir: string): Promise<RunFolder> {
  if (spec.version.cwd) {
    if (!isFolder(spec.version.cwd)) return { error: `working folder ${spec.version.cwd} not found` };
    return { cwd: spec.version.cwd, scratch: false };
  }
  const cwd = path.join(runsDir, spec.run.id);
  try {
    // Synchronous on purpose: one small mkdir costs less than a trip through the thread pool, on every run's start.
    mkdirSync(cwd, { recursive: true });
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
  return { cwd, scratch: true };
}

/**
 * Most runners leave their scratch folder empty, which one rmdir settles (off the event loop: it can take a
 * millisecond); one that ran in a spare sandbox left a symlink here (the spare's folder goes with the spare).
 */
export async function removeScratchFolder(folder: string): Promise<void> {
  try {
    await rmdir(folder);
  } catch (error) {
    const removal =
      (error as NodeJS.ErrnoException).code === 'ENOTDIR'
        ? unlink(folder)
        : rm(folder, { recursive: true, force: true });
    await removal.catch(() => {});
  }
}
