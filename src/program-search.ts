import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

/** Whether `file` is a regular file this process may execute. */
export function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Where `program` (a bare name) is found on `searchPath` (a PATH value), as a spawn would find it; else null. */
export function findOnPath(program: string, searchPath: string): string | null {
  for (const dir of searchPath.split(':')) {
    if (dir !== '' && isExecutableFile(path.join(dir, program))) return path.join(dir, program);
  }
  return null;
}
