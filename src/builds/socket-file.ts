import { existsSync } from 'node:fs';

/**
 * Waits for a starting server's socket file, which it makes only once it listens (forkserver.listen_with_id):
 * true once `path` exists, false as soon as `waiting()` says there is no use looking any more.
 */
export async function untilSocketFile(path: string, waiting: () => boolean, pollMs: number): Promise<boolean> {
  for (;;) {
    if (existsSync(path)) return true;
    if (!waiting()) return false;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
