import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import { type BuildDirs, environmentsInUse, removeVersionFiles, versionsOnDisk } from './builder.js';
import { sweepEnvironments } from './environment-cache.js';
import { existingVersionIds } from './repository.js';

/** Removes the cached environments no version built here uses any more (nor a build going on, nor another installation). */
export async function removeUnusedEnvironments(dirs: BuildDirs, logger: Logger): Promise<void> {
  const removed = await sweepEnvironments(dirs.cacheDir, dirs.dataDir, await environmentsInUse(dirs.dataDir));
  if (removed.length > 0) logger.info({ removed }, 'removed environments no version uses any more');
}

/**
 * At start, before any build: the files of versions deleted meanwhile (through another instance, or
 * while this one was down) go, then the environments only they used.
 */
export async function removeLeftovers(db: Kysely<Database>, dirs: BuildDirs, logger: Logger): Promise<void> {
  const onDisk = await versionsOnDisk(dirs.dataDir);
  const existing = await existingVersionIds(db, onDisk);
  for (const id of onDisk.filter((versionId) => !existing.has(versionId))) {
    await removeVersionFiles(dirs.dataDir, id);
  }
  await removeUnusedEnvironments(dirs, logger);
}
