import { existsSync, readFileSync } from 'node:fs';

/** crewd's version, from its package.json (next to src/ from the sources, next to dist/ when compiled). */
export function packageVersion(): string {
  for (const relative of ['../../package.json', '../../../package.json']) {
    const file = new URL(relative, import.meta.url);
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return 'unknown';
}
