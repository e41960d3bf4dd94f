import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createBubblewrapSandbox } from './bubblewrap.js';
import type { RunnerNetwork } from './types.js';

const run = promisify(execFile);

/** The first executable `bwrap` on the search path, or null. */
export function findBwrap(searchPath: string): string | null {
  for (const folder of searchPath.split(path.delimiter)) {
    if (!folder) continue;
    const candidate = path.join(folder, 'bwrap');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

export type ProbeResult = { usable: true; bwrapPath: string } | { usable: false; reason: string };

/**
 * Whether bubblewrap works here, tried once with the very arguments runners get: some machines
 * have bwrap but forbid the namespaces it needs (a container's seccomp profile, a kernel setting).
 */
export async function probeBubblewrap(searchPath: string, network: RunnerNetwork): Promise<ProbeResult> {
  const bwrapPath = findBwrap(searchPath);
  if (!bwrapPath) return { usable: false, reason: 'bwrap was not found on PATH' };
  const scratch = mkdtempSync(path.join(tmpdir(), 'crewd-sandbox-probe-'));
  try {
    const sandbox = createBubblewrapSandbox({ bwrapPath, network, dataDir: path.join(scratch, 'data') });
    const plan = sandbox.wrap(
      { command: ['/bin/sh', '-c', 'exit 0'], cwd: scratch, env: { PATH: '/usr/bin:/bin' } },
      { writable: [scratch], readOnly: [] },
    );
    const [file, ...args] = plan.command;
    await run(file as string, args, { cwd: plan.cwd, env: plan.env, timeout: 10_000 });
    return { usable: true, bwrapPath };
  } catch (error) {
    const failure = error as { stderr?: string; message: string };
    const detail = failure.stderr?.trim() || failure.message;
    return { usable: false, reason: `${bwrapPath} cannot create namespaces here: ${detail.split('\n')[0]}` };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
