import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { lstat, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { processAlive } from '../execution/process-group.js';
import { randomToken } from '../ids.js';
import { readInside, writeInside } from './safe-files.js';

/**
 * The environment cache (BUILD_CACHE_DIR, default DATA_DIR/environments): `<org>/<key>` per
 * environment, `<org>/tool-cache` for pip, uv and npm. The folder may be shared by several
 * installations on one machine (the tests share one), so an environment is removed only when no
 * installation claims it: each installation writes a claim file into the environments its versions
 * use, and drops it when they no longer do. Claims and removals happen under a per-environment lock.
 */

/** Written last into a finished environment: without it, a folder is the leftover of a failed build. */
export const COMPLETE = '.complete';
const CLAIMS = '.claims';
const KEY = /^[0-9a-f]{64}$/;
const LOCK_POLL_MS = 200;
/** A lock folder whose owner has not written its pid after this long is left from a crash. */
const UNOWNED_LOCK_MS = 10_000;

const INSTALLATION_ID = 'installation-id';
const INSTALLATION = /^[A-Za-z0-9]{24}$/;

/**
 * This installation's folder of the cache, `<cacheDir>/<installation id>`: the id is made once, at
 * random, and kept in DATA_DIR, so two installations sharing BUILD_CACHE_DIR never share an
 * environment or a tool cache (one could plant code, a `.pth` file, that the other's runs execute).
 */
export function installationCache(cacheDir: string, dataDir: string): string {
  const file = path.resolve(dataDir, INSTALLATION_ID);
  mkdirSync(path.dirname(file), { recursive: true });
  try {
    writeFileSync(file, randomToken(24), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const id = readFileSync(file, 'utf8').trim();
  if (!INSTALLATION.test(id)) throw new Error(`${file} does not hold an installation id: remove it to make a new one`);
  return path.resolve(cacheDir, id);
}

/** The organization's folder of the cache: environments are never shared between organizations. */
export const organizationCache = (cacheDir: string, orgId: string) => path.resolve(cacheDir, orgId);

/** Package-tool caches of build steps, per organization, so repeat builds download nothing. */
export function toolCacheEnv(orgDir: string): Record<string, string> {
  const tools = path.join(orgDir, 'tool-cache');
  return {
    PIP_CACHE_DIR: path.join(tools, 'pip'),
    UV_CACHE_DIR: path.join(tools, 'uv'),
    npm_config_cache: path.join(tools, 'npm'),
  };
}

const claimName = (dataDir: string) => createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16);

/** Environments this process is using right now (a build, or a version's files being made): never removed. */
const pins = new Map<string, number>();

export function pin(home: string): () => void {
  pins.set(home, (pins.get(home) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (pins.get(home) ?? 1) - 1;
    if (left > 0) pins.set(home, left);
    else pins.delete(home);
  };
}

/** Whether a lock folder is left by a process that no longer runs. */
async function abandoned(lockDir: string): Promise<boolean> {
  // Build steps write the organization's folder: its files are read as a bundle's are (safe-files.ts).
  const pidFile = path.join(lockDir, 'pid');
  const owner = Number((await readInside(path.dirname(lockDir), pidFile, 64).catch(() => null))?.data.toString() ?? '');
  if (owner > 0) return owner !== process.pid && !processAlive(owner);
  const info = await stat(lockDir).catch(() => null);
  return info !== null && Date.now() - info.mtimeMs > UNOWNED_LOCK_MS;
}

/** Takes `<home>.lock` (mkdir is atomic), or answers null when another process holds it. */
export async function tryLock(home: string): Promise<(() => Promise<void>) | null> {
  const lockDir = `${home}.lock`;
  await mkdir(path.dirname(home), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await mkdir(lockDir);
      await writeInside(path.dirname(lockDir), path.join(lockDir, 'pid'), String(process.pid));
      return () => rm(lockDir, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (!(await abandoned(lockDir))) return null;
      await rm(lockDir, { recursive: true, force: true });
    }
  }
  return null;
}

/** Waits for the lock while another process builds the same environment; throws when `give up` says so. */
export async function lock(home: string, giveUp: () => string | null): Promise<() => Promise<void>> {
  for (;;) {
    const release = await tryLock(home);
    if (release) return release;
    const reason = giveUp();
    if (reason) throw new Error(reason);
    await sleep(LOCK_POLL_MS);
  }
}

/** Records that this installation (its DATA_DIR) uses the environment. Under the lock. */
export async function claim(home: string, dataDir: string): Promise<void> {
  await mkdir(path.join(home, CLAIMS), { recursive: true });
  await writeInside(path.dirname(home), path.join(home, CLAIMS, claimName(dataDir)), path.resolve(dataDir));
}

/** Drops this installation's claim and those of installations whose DATA_DIR is gone; answers whether any is left. */
async function dropClaims(home: string, dataDir: string): Promise<boolean> {
  const folder = path.join(home, CLAIMS);
  // Not a folder of its own (a link a build step made): no claims, and nothing of where it leads is touched.
  if (!(await lstat(folder).catch(() => null))?.isDirectory()) return false;
  const names = await readdir(folder).catch(() => [] as string[]);
  let left = 0;
  for (const name of names) {
    const file = path.join(folder, name);
    const owner = (await readInside(folder, file, 4096).catch(() => null))?.data.toString() ?? '';
    if (name === claimName(dataDir) || !owner || !existsSync(owner)) await rm(file, { force: true });
    else left++;
  }
  return left > 0;
}

/** Removes a folder by renaming it aside first, so that no one finds it half removed. */
async function removeFolder(folder: string): Promise<void> {
  const aside = `${folder}.removing-${process.pid}-${Date.now()}`;
  await rename(folder, aside).catch(() => undefined);
  await rm(aside, { recursive: true, force: true });
}

/**
 * Removes the environments of the cache that nothing uses any more: not `inUse` (the environments
 * of this installation's versions), not pinned by this process, not being built by another
 * process, not claimed by another installation. Answers the folders removed.
 */
export async function sweepEnvironments(cacheDir: string, dataDir: string, inUse: Set<string>): Promise<string[]> {
  const removed: string[] = [];
  for (const org of await readdir(cacheDir).catch(() => [] as string[])) {
    const orgDir = organizationCache(cacheDir, org);
    const names = await readdir(orgDir).catch(() => [] as string[]);
    for (const name of names) {
      const leftover =
        name.includes('.removing-') || (name.endsWith('.lock') && (await abandoned(path.join(orgDir, name))));
      if (leftover) await rm(path.join(orgDir, name), { recursive: true, force: true });
    }
    for (const name of names.filter((entry) => KEY.test(entry))) {
      const home = path.join(orgDir, name);
      if (inUse.has(home) || pins.has(home)) continue;
      const release = await tryLock(home);
      if (!release) continue;
      try {
        if (!(await dropClaims(home, dataDir))) {
          await removeFolder(home);
          removed.push(home);
        }
      } finally {
        await release();
      }
    }
  }
  return removed;
}
