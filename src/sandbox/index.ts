import type { Logger } from 'pino';
import { pythonOnPath } from '../python-on-path.js';
import type { RunLimits } from '../run-limits.js';
import { createBubblewrapSandbox } from './bubblewrap.js';
import { plainSandbox } from './plain.js';
import { type NetworkProbeResult, probeBubblewrap, probeIsolatedNetwork } from './probe.js';
import type { RunnerNetwork, Sandbox, SandboxMode } from './types.js';

export type {
  Confinement,
  ProcessPlan,
  RunnerNetwork,
  Sandbox,
  SandboxMode,
  SpareShape,
  WrappedPlan,
} from './types.js';

export interface SandboxOptions {
  mode: SandboxMode;
  /** RUNNER_NETWORK; unset: `isolated`, or the host's network with a warning where `auto` cannot isolate. */
  network: RunnerNetwork | undefined;
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
  /** Where to look for the isolated network's tools; default the system's folders. */
  networkToolPath?: string | undefined;
}

/**
 * The installation folder of the `python3` on `searchPath` (through a version manager's shims),
 * which builds make environments from; none when there is no Python.
 */
async function pythonRuntime(searchPath: string): Promise<string[]> {
  const python = await pythonOnPath({ PATH: searchPath });
  return python ? [python.installation] : [];
}

/** What to install for RUNNER_NETWORK=isolated, said with each refusal and warning. */
const NETWORK_ADVICE = 'install slirp4netns, iproute2 and util-linux (Debian packages)';

/** The network a sandbox's runners get: the one asked for, or `on` where the default cannot be had. */
async function chooseNetwork(
  options: SandboxOptions,
  bwrapPath: string,
): Promise<{ network: RunnerNetwork; probe: NetworkProbeResult | null }> {
  const network = options.network ?? 'isolated';
  if (network !== 'isolated') return { network, probe: null };
  const probe = await probeIsolatedNetwork(bwrapPath, options.networkToolPath);
  if (probe.usable) return { network, probe };
  if (options.network === 'isolated' || options.mode === 'on') {
    const setting = options.network === 'isolated' ? 'RUNNER_NETWORK=isolated' : 'RUNNER_SANDBOX=on';
    throw new Error(
      `${setting} but runners cannot get an isolated network: ${probe.reason}; ${NETWORK_ADVICE}, or set RUNNER_NETWORK=on to give runners the host's network`,
    );
  }
  options.logger.warn(
    { network: 'on', reason: probe.reason },
    `runners get the host's network (they reach its addresses and ports): ${NETWORK_ADVICE} for an isolated one, or set RUNNER_NETWORK=on to accept this`,
  );
  return { network: 'on', probe };
}

/**
 * The isolation runners (and builds) get, decided once at start (CONTRACTS §12): bubblewrap when
 * it works here, else plain processes for `auto` (with one warning), or a refusal to start for
 * `on` and for RUNNER_NETWORK=off or isolated set explicitly, which nothing but the sandbox can
 * honour. The network likewise: `isolated` when its tools work, else for `auto` with RUNNER_NETWORK
 * unset the host's (with one warning), else a refusal.
 */
export async function createSandbox(options: SandboxOptions): Promise<Sandbox> {
  const { mode, network, logger } = options;
  if (mode === 'off') {
    if (network === 'off' || network === 'isolated') {
      throw new Error(`RUNNER_NETWORK=${network} needs the sandbox: set RUNNER_SANDBOX to auto or on`);
    }
    logger.info({ sandbox: 'none', network: 'on' }, 'runners run as plain processes (RUNNER_SANDBOX=off)');
    return plainSandbox;
  }
  const probe = await probeBubblewrap(options.searchPath ?? process.env.PATH ?? '', network ?? 'isolated');
  if (probe.usable) {
    const chosen = await chooseNetwork(options, probe.bwrapPath);
    logger.info(
      { sandbox: 'bubblewrap', bwrap: probe.bwrapPath, network: chosen.network },
      'runners run in a bubblewrap sandbox',
    );
    return createBubblewrapSandbox({
      bwrapPath: probe.bwrapPath,
      network: chosen.network,
      networkSetup: chosen.probe?.usable ? chosen.probe.setup : null,
      dataDir: options.dataDir,
      hidden: options.hidden,
      extraPaths: options.extraPaths,
      limits: options.limits,
      runtimes: await pythonRuntime(options.runnerPath ?? process.env.PATH ?? ''),
    });
  }
  if (mode === 'on') throw new Error(`RUNNER_SANDBOX=on but the sandbox is unusable: ${probe.reason}`);
  if (network === 'off' || network === 'isolated') {
    throw new Error(`RUNNER_NETWORK=${network} needs the sandbox, which is unusable: ${probe.reason}`);
  }
  logger.warn(
    { sandbox: 'none', network: 'on', reason: probe.reason },
    "runners run as plain processes WITHOUT isolation: a crew can read DATA_DIR and crewd's environment and reach the host's network; install bubblewrap (and slirp4netns, for an isolated network), or set RUNNER_SANDBOX=off to accept this",
  );
  return plainSandbox;
}
