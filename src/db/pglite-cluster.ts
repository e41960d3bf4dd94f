import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';

/**
 * A new embedded database starts from a copy of an empty cluster, made once per PGlite version: PGlite's initdb
 * costs about 7 s of CPU, loading the copy about 1 s. The copy lies in the installation's `node_modules/.cache/crewd`
 * (where build tools keep their caches); it holds only what initdb writes, nothing of any instance. Where that folder
 * cannot be written, every new database runs initdb, as before.
 */
export function emptyClusterCopy(file = emptyClusterFile()): {
  file: string;
  load(): Blob | undefined;
  save(pglite: PGlite): Promise<void>;
} {
  return {
    file,
    load: () => (existsSync(file) ? new Blob([readFileSync(file)]) : undefined),
    async save(pglite) {
      try {
        const dump = Buffer.from(await (await pglite.dumpDataDir('gzip')).arrayBuffer());
        mkdirSync(path.dirname(file), { recursive: true });
        // Written whole, then renamed: two instances starting at once never read half a copy.
        const partial = `${file}.${process.pid}.partial`;
        writeFileSync(partial, dump);
        renameSync(partial, file);
      } catch {
        // A read-only installation keeps no copy; the next new database runs initdb again.
      }
    },
  };
}

/** `node_modules/.cache/crewd/pglite-<version>-empty-cluster.tar.gz` of the PGlite package crewd loads. */
function emptyClusterFile(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  let packageRoot = path.dirname(entry);
  while (!existsSync(path.join(packageRoot, 'package.json'))) packageRoot = path.dirname(packageRoot);
  const { version } = JSON.parse(readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string };
  const nodeModules = path.resolve(packageRoot, '../..');
  return path.join(nodeModules, '.cache', 'crewd', `pglite-${version}-empty-cluster.tar.gz`);
}

/** True when `dataDir` holds no cluster yet (initdb writes PG_VERSION). */
export const isNewCluster = (dataDir: string) => !existsSync(path.join(dataDir, 'PG_VERSION'));
