import { mkdirSync, renameSync, symlinkSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { randomToken } from '../ids.js';
import type { SpareShape } from '../sandbox/index.js';
import type { LaunchedProcess, ProcessLauncher } from './launcher.js';
import { removeFoldersOfGoneProcesses } from './process-group.js';
import { removeScratchFolder } from './run-setup.js';

/** A spare nobody took for this long is ended; the next run of its shape makes another. */
const DEFAULT_IDLE_MS = 60_000;
/** Shapes (versions, roughly) with a spare waiting at once; past it the oldest spare is ended. */
const DEFAULT_MAX_SPARES = 4;
/** Spares' folders on the host: `DATA_DIR/runs/.spare-<pid of their crewd>-…`, next to the runs' own. */
const SPARE_PREFIX = '.spare-';
const LEFTOVER = /^\.spare-(\d+)-/;

interface Spare {
  folder: string;
  /** The name of the run folder moved into it, once a run took it. */
  runFolder: string | null;
  process: LaunchedProcess;
  /** Its shape's stamp when it was made. */
  stamp: string;
  exited: boolean;
  idleTimer: NodeJS.Timeout;
}

export interface SparePoolOptions {
  /** DATA_DIR/runs on the host. */
  runsDir: string;
  logger: Logger;
  idleMs?: number | undefined;
  maxSpares?: number | undefined;
}

/**
 * Spare sandboxes (CONTRACTS §12 unchanged): once a process of a shape ends, a sandbox of the
 * same shape is made ahead, waiting in a shell; the next process of that shape takes it by
 * writing its line, and is `exec`ed in it. The sandbox's set-up (namespaces, mounts) is then off
 * the run's path. A scratch folder is moved into the spare's folder, which its sandbox sees as
 * DATA_DIR/runs, and a symlink at its usual place leads there.
 */
export function createSparePool(launcher: ProcessLauncher, options: SparePoolOptions) {
  const { runsDir, logger } = options;
  const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  const maxSpares = options.maxSpares ?? DEFAULT_MAX_SPARES;
  /** One waiting spare per shape key, oldest first. */
  const waiting = new Map<string, Spare>();
  const starting = new Set<string>();
  let stopped = false;

  function end(spare: Spare): void {
    clearTimeout(spare.idleTimer);
    void spare.process.endGroup(0);
  }

  async function startSpare(shape: SpareShape): Promise<void> {
    const folder = path.join(runsDir, `${SPARE_PREFIX}${process.pid}-${randomToken(12)}`);
    mkdirSync(folder);
    const plan = shape.spare(folder);
    const stamp = shape.stamp();
    const launched = await launcher.launch({ ...plan, stdin: null, confinement: { writable: [], readOnly: [] } });
    if ('error' in launched) {
      await rm(folder, { recursive: true, force: true });
      throw new Error(launched.error);
    }
    const idleTimer = setTimeout(() => end(spare), idleMs);
    const spare: Spare = { folder, runFolder: null, process: launched, stamp, exited: false, idleTimer };
    spare.idleTimer.unref();
    void launched.exit.then(async () => {
      spare.exited = true;
      clearTimeout(spare.idleTimer);
      if (waiting.get(shape.key) === spare) waiting.delete(shape.key);
      // Most runs leave their folder empty: an rmdir each, as for any scratch folder.
      if (spare.runFolder !== null) await removeScratchFolder(path.join(folder, spare.runFolder));
      await removeScratchFolder(folder);
    });
    if (stopped) return end(spare);
    waiting.set(shape.key, spare);
    if (waiting.size > maxSpares) {
      const [oldestKey, oldest] = waiting.entries().next().value as [string, Spare];
      waiting.delete(oldestKey);
      end(oldest);
    }
  }

  /** Makes a spare of this shape unless one waits or is being made. */
  function make(shape: SpareShape): void {
    if (stopped || waiting.has(shape.key) || starting.has(shape.key)) return;
    starting.add(shape.key);
    startSpare(shape)
      .catch((error: unknown) => logger.warn({ err: error }, 'could not make a spare sandbox'))
      .finally(() => starting.delete(shape.key));
  }

  function takeSpare(shape: SpareShape): Spare | null {
    const spare = waiting.get(shape.key);
    if (!spare) return null;
    waiting.delete(shape.key);
    clearTimeout(spare.idleTimer);
    if (spare.exited) return null;
    if (spare.stamp === shape.stamp()) return spare;
    end(spare);
    return null;
  }

  /** The run's fresh scratch folder goes where the spare's sandbox sees it; a symlink leads there. */
  function moveInto(spare: Spare, scratch: string): void {
    // Both live in DATA_DIR/runs: the link leads to `.spare-…/<run id>` beside it.
    spare.runFolder = path.basename(scratch);
    const relative = path.join(path.basename(spare.folder), spare.runFolder);
    renameSync(scratch, path.join(path.dirname(scratch), relative));
    symlinkSync(relative, scratch);
  }

  return {
    /** The process in a spare of its shape, or null when none waits. */
    take(shape: SpareShape, stdin: string, keepStdinOpen?: boolean): LaunchedProcess | null {
      const spare = takeSpare(shape);
      if (!spare) return null;
      try {
        if (shape.scratch) moveInto(spare, shape.scratch);
      } catch (error) {
        end(spare);
        throw error;
      }
      spare.process.sendStdin(`${shape.line}\n${stdin}`, keepStdinOpen);
      return spare.process;
    },

    /**
     * A process of this shape ended: a spare is made for the next one, now that the machine has
     * a moment (made as the process starts, it would slow that start down).
     */
    madeRoomFor(shape: SpareShape): void {
      make(shape);
    },

    /**
     * Removes the spares' folders of crewd processes that are gone (killed before they could);
     * another live process's (tests share a DATA_DIR) are left alone.
     */
    removeLeftovers(): void {
      removeFoldersOfGoneProcesses(runsDir, LEFTOVER);
    },

    /** Ends the spares; a taken one is its run's, which ends with the launcher. */
    async stop(): Promise<void> {
      stopped = true;
      const ending = [...waiting.values()].map((spare) => spare.process.exit);
      for (const spare of waiting.values()) end(spare);
      waiting.clear();
      await Promise.all(ending);
    },
  };
}

export type SparePool = ReturnType<typeof createSparePool>;
