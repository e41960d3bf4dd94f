import type { Logger } from 'pino';
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
  logger: Logger;
  /** Where to look for bwrap; default this process's PATH. */
  searchPath?: string | undefined;
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
