import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import type { RunLimits } from '../execution/limits.js';
import { createBubblewrapSandbox } from './bubblewrap.js';
import { plainSandbox } from './plain.js';
import { probeBubblewrap } from './probe.js';
import type { RunnerNetwork, Sandbox, SandboxMode } from './types.js';

export type { Confinement, ProcessPlan, RunnerNetwork, Sandbox, SandboxMode, SpareShape } from './types.js';

export interface SandboxOptions {
  mode: SandboxMode;
  network: RunnerNetwork;
  dataDir: string;
  /** Other folders hidden from runners as DATA_DIR is (BUILD_CACHE_DIR). */
  hidden?: string[] | undefined;
  /** RUNNER_EXTRA_PATHS. */
  extraPaths?: string[] | undefined;
  limits?: RunLimits | undefined;
  /** The PATH runners and builds get: its python3 is a runtime the sandbox shows. */
  runnerPath?: string | undefined;
  logger: Logger;
  /** Where to look for bwrap; default this process's PATH. */
  searchPath?: string | undefined;
}

const execute = promisify(execFile);

/**
 * The installation folder of the `python3` on `searchPath` (through a version manager's shims),
 * which builds make environments from; none when there is no Python.
 */
async function pythonRuntime(searchPath: string): Promise<string[]> {
  const code = 'import os, sys; print(os.path.realpath(sys.base_prefix))';
  try {
    const { stdout } = await execute('python3', ['-c', code], { env: { PATH: searchPath }, timeout: 10_000 });
    return stdout.trim() ? [stdout.trim()] : [];
  } catch {
    return [];
  }
}

/**
 * The isolation runners (and builds) get, decided once at start (CONTRACTS §12): bubblewrap when
 * it works here, else plain processes for `auto` (with one warning), or a refusal to start for
 * `on` and for RUNNER_NETWORK=off, which nothing but the sandbox can honour.
 */
export async function createSandbox(options: SandboxOptions): Promise<Sandbox> {
  const { mode, network, logger } = options;
  if (mode === 'off') {
    if (network === 'off') throw new Error('RUNNER_NETWORK=off needs the sandbox: set RUNNER_SANDBOX to auto or on');
    logger.info({ sandbox: 'none' }, 'runners run as plain processes (RUNNER_SANDBOX=off)');
    return plainSandbox;
  }
  const probe = await probeBubblewrap(options.searchPath ?? process.env.PATH ?? '', network);
  if (probe.usable) {
    logger.info({ sandbox: 'bubblewrap', bwrap: probe.bwrapPath, network }, 'runners run in a bubblewrap sandbox');
    return createBubblewrapSandbox({
      bwrapPath: probe.bwrapPath,
      network,
      dataDir: options.dataDir,
      hidden: options.hidden,
      extraPaths: options.extraPaths,
      limits: options.limits,
      runtimes: await pythonRuntime(options.runnerPath ?? process.env.PATH ?? ''),
    });
  }
  if (mode === 'on') throw new Error(`RUNNER_SANDBOX=on but the sandbox is unusable: ${probe.reason}`);
  if (network === 'off') throw new Error(`RUNNER_NETWORK=off needs the sandbox, which is unusable: ${probe.reason}`);
  logger.warn(
    { sandbox: 'none', reason: probe.reason },
    "runners run as plain processes WITHOUT isolation: a crew can read DATA_DIR and crewd's environment; install bubblewrap, or set RUNNER_SANDBOX=off to accept this",
  );
  return plainSandbox;
}
