import { readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** True while the process exists (`-pgid`: any process of the group), whoever owns it. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the folders of `parent` whose names `owned` ties to a crewd process (its first group, a pid) that is gone:
 * what a killed process could not remove itself. A live process's (tests share a DATA_DIR) are left alone.
 */
export function removeFoldersOfGoneProcesses(parent: string, owned: RegExp): void {
  let names: string[] = [];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const owner = owned.exec(name)?.[1];
    if (owner !== undefined && !processAlive(Number(owner))) {
      void rm(path.join(parent, name), { recursive: true, force: true });
    }
  }
}

/** True while any process of the group exists (zombies aside, which are already dead). */
export const groupAlive = (pgid: number): boolean => processAlive(-pgid);

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
}

/**
 * SIGTERM to the whole process group, then SIGKILL once `graceMs` passed with any member
 * left, so no grandchild outlives its run.
 */
export async function terminateGroup(pgid: number, graceMs: number, pollMs = 25): Promise<void> {
  if (!groupAlive(pgid)) return;
  signalGroup(pgid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    await sleep(Math.min(pollMs, Math.max(1, deadline - Date.now())));
    if (!groupAlive(pgid)) return;
  }
  signalGroup(pgid, 'SIGKILL');
}
