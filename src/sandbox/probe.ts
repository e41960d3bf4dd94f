import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createBubblewrapSandbox } from './bubblewrap.js';
import { findNetworkTools, type NetworkSetup } from './network.js';
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

/** Runs `exit 0` in a sandbox of these settings; the first line of what went wrong, or null. */
async function trySandbox(
  bwrapPath: string,
  network: RunnerNetwork,
  networkSetup?: NetworkSetup,
): Promise<string | null> {
  const scratch = mkdtempSync(path.join(tmpdir(), 'crewd-sandbox-probe-'));
  try {
    const sandbox = createBubblewrapSandbox({ bwrapPath, network, networkSetup, dataDir: path.join(scratch, 'data') });
    const plan = sandbox.wrap(
      { command: ['/bin/sh', '-c', 'exit 0'], cwd: scratch, env: { PATH: '/usr/bin:/bin' } },
      { writable: [scratch], readOnly: [] },
    );
    const [file, ...args] = plan.command;
    const started = run(file as string, args, { cwd: plan.cwd, env: plan.env, timeout: 10_000 });
    // A bwrap that fails at once has closed its input already: its error is what the probe reports.
    started.child.stdin?.on('error', () => {}).end(`${plan.line ?? ''}\n`);
    await started;
    return null;
  } catch (error) {
    const failure = error as { stderr?: string; message: string };
    return (failure.stderr?.trim() || failure.message).split('\n')[0] as string;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Whether bubblewrap works here, tried once with the very arguments runners get: some machines
 * have bwrap but forbid the namespaces it needs (a container's seccomp profile, a kernel setting).
 * `isolated` is tried as `on` here: probeIsolatedNetwork tells whether that network works.
 */
export async function probeBubblewrap(searchPath: string, network: RunnerNetwork): Promise<ProbeResult> {
  const bwrapPath = findBwrap(searchPath);
  if (!bwrapPath) return { usable: false, reason: 'bwrap was not found on PATH' };
  const failure = await trySandbox(bwrapPath, network === 'isolated' ? 'on' : network);
  return failure === null
    ? { usable: true, bwrapPath }
    : { usable: false, reason: `${bwrapPath} cannot create namespaces here: ${failure}` };
}

export type NetworkProbeResult = { usable: true; setup: NetworkSetup } | { usable: false; reason: string };

/** Whether RUNNER_NETWORK=isolated works here (its tools found, a sandbox started in it). */
export async function probeIsolatedNetwork(bwrapPath: string, toolPath?: string): Promise<NetworkProbeResult> {
  const found = findNetworkTools(toolPath);
  if ('missing' in found) return { usable: false, reason: found.missing };
  const setup = { tools: found.tools };
  const failure = await trySandbox(bwrapPath, 'isolated', setup);
  return failure === null ? { usable: true, setup } : { usable: false, reason: failure };
}
