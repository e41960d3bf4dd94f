import { copyFileSync, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { randomToken } from '../ids.js';
import { homeEnvironment } from '../sandbox/home.js';
import type { HomeFile } from '../sandbox/types.js';
import { removeFoldersOfGoneProcesses } from './process-group.js';

/** Homes of plain processes: `DATA_DIR/runs/.home-<pid of their crewd>-…/{home,tmp}`. */
const HOME_PREFIX = '.home-';
const LEFTOVER = /^\.home-(\d+)-/;

/**
 * A home and a TMPDIR of a plain process's own (outside the sandbox), with `files` copied in; its
 * environment points there, and `remove` takes the whole folder away once the process is done.
 */
export async function makeHome(runsDir: string, files: readonly HomeFile[]) {
  const folder = path.join(runsDir, `${HOME_PREFIX}${process.pid}-${randomToken(12)}`);
  const home = path.join(folder, 'home');
  const tmp = path.join(folder, 'tmp');
  // Synchronous on purpose, as a run's scratch folder: two small mkdirs cost less than trips through the thread pool.
  mkdirSync(home, { recursive: true, mode: 0o700 });
  mkdirSync(tmp);
  const remove = () => rm(folder, { recursive: true, force: true }).catch(() => {});
  try {
    for (const file of files) {
      const target = path.join(home, file.target);
      mkdirSync(path.dirname(target), { recursive: true });
      copyFileSync(file.source, target);
    }
  } catch (error) {
    await remove();
    throw error;
  }
  return { env: homeEnvironment(home, tmp), remove };
}

/** Removes the homes of crewd processes that are gone (killed before they could); a live one's are left alone. */
export function removeLeftoverHomes(runsDir: string): void {
  removeFoldersOfGoneProcesses(runsDir, LEFTOVER);
}
