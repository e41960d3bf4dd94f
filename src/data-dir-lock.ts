import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const LOCK_FILE = 'crewd.lock';

interface Holder {
  pid: number;
  /** The process's start time in clock ticks since boot (Linux), so a reused pid is not taken for the holder. */
  started: string | null;
  token: string;
}

export class DataDirInUseError extends Error {
  constructor(
    readonly folder: string,
    readonly pid: number,
  ) {
    super(
      `DATA_DIR ${folder} is in use by crewd process ${pid} (lock file ${path.join(folder, LOCK_FILE)}); stop that process or choose another DATA_DIR`,
    );
  }
}

export interface DataDirLock {
  readonly file: string;
  /** Removes the lock file if it is still this process's. */
  release(): void;
}

function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces; field 22 is the start time.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function isRunning(holder: Holder): boolean {
  // A lock naming this very pid was left by an earlier life of it (a container restarted after a kill).
  if (holder.pid === process.pid) return false;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const started = startTime(holder.pid);
  return holder.started === null || started === null || started === holder.started;
}

function readHolder(file: string): { text: string; holder: Holder | null } | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Holder;
    return { text, holder: Number.isInteger(parsed.pid) && parsed.pid > 0 ? parsed : null };
  } catch {
    return { text, holder: null };
  }
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}

/**
 * Moves aside a lock whose holder is gone. Should another starter have replaced it meanwhile, the
 * lock moved is that starter's live one: it goes back, and the next look finds its holder.
 */
function removeStale(file: string, staleText: string): void {
  const aside = `${file}.stale-${process.pid}`;
  try {
    renameSync(file, aside);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  if (readFileSync(aside, 'utf8') !== staleText) {
    try {
      linkSync(aside, file);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
  }
  unlinkSync(aside);
}

/**
 * One crewd per data folder (PGlite does not survive two): the lock file is created whole in one
 * step (a hard link of a written file), names its process, and counts for nothing once that
 * process is gone, so a crewd killed with SIGKILL does not block the next start.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const folder = path.resolve(dataDir);
  mkdirSync(folder, { recursive: true });
  const file = path.join(folder, LOCK_FILE);
  const own: Holder = { pid: process.pid, started: startTime(process.pid), token: randomBytes(12).toString('hex') };
  const draft = `${file}.${process.pid}.${own.token}`;
  writeFileSync(draft, `${JSON.stringify(own)}\n`, { mode: 0o644 });
  try {
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        linkSync(draft, file);
        return {
          file,
          release() {
            if (readHolder(file)?.holder?.token === own.token) unlinkSync(file);
          },
        };
      } catch (error) {
        if (errorCode(error) !== 'EEXIST') throw error;
      }
      const current = readHolder(file);
      if (!current) continue;
      if (current.holder && isRunning(current.holder)) throw new DataDirInUseError(folder, current.holder.pid);
      removeStale(file, current.text);
    }
    throw new Error(`could not take the lock ${file}: other processes keep changing it`);
  } finally {
    unlinkSync(draft);
  }
}
