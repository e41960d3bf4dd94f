import { networkInterfaces } from 'node:os';
import { findOnPath } from '../program-search.js';
import type { RunnerNetwork } from './types.js';

/** Where the programs the isolated network needs are looked for: never the runner's own PATH. */
const SYSTEM_PATH = '/usr/bin:/bin:/usr/sbin:/sbin';

/** The programs, each with the Debian package that has it. */
const TOOLS = {
  slirp4netns: 'slirp4netns',
  ip: 'iproute2',
} as const;
type Tool = keyof typeof TOOLS;

/** Addresses no run reaches besides the host's own: link-local, where clouds keep their metadata service. */
const ALWAYS_BLOCKED = ['169.254.0.0/16'];

/** slirp4netns's side of the link, as its own --configure would set it (the sandbox's address, its gateway). */
const LINK = ['link set tap0 mtu 65520 up', 'addr add 10.0.2.100/24 dev tap0', 'route add default via 10.0.2.2'];

/** The descriptor on which bwrap says its sandbox's pid, on the host. */
const INFO_FD = 5;
/** The descriptor on which the sandbox's first program gets the stack's readiness, and closes. */
const GATE_FD = 6;

/**
 * What the sandbox's first shell runs under `isolated`, before anything of the process, with the
 * capabilities of the sandbox's user namespace (which owns its network): it waits until
 * slirp4netns says its interface is there (it writes `1`), or fails the start when the stack ended
 * without saying so; closes the descriptor, which the process never gets; then has `ip` ($1) set
 * the interface up and every address of the host unreachable by a route ($2, `ip -batch` lines).
 * The process runs with every capability dropped (bubblewrap.ts), so it cannot remove them.
 */
const NETWORK_GATE = `{ read -r up <&${GATE_FD}; [ "$up" = 1 ]; } || { echo "crewd: the run's isolated network could not be set up: slirp4netns did not start (RUNNER_NETWORK=isolated)" >&2; exit 125; }; exec ${GATE_FD}<&-
"$1" -batch - <<E || { echo "crewd: the run's isolated network could not be set up: ip failed (RUNNER_NETWORK=isolated)" >&2; exit 125; }
$2
E
shift 2; `;

/**
 * Starts bwrap, which makes the sandbox's network namespace (--unshare-net, in the sandbox's user
 * namespace) and says its pid on --info-fd; then slirp4netns, the user-mode stack, is attached to
 * that namespace (the internet through host sockets; neither the host's loopback nor its DNS
 * forwarder: --disable-host-loopback --disable-dns), while bwrap sets up the sandbox's mounts. The
 * stack writes its readiness straight to the sandbox's first program (`NETWORK_GATE`), which waits
 * for it before the process can start, so a run never sees a network that is not up yet.
 * The stack ends with the sandbox: its --exit-fd is held by this shell, which exits as the sandbox
 * does, without waiting for the stack to take its interface down (some 20 ms on the run's path).
 * No program but the shell, bwrap and slirp4netns runs on the host (each costs CPU on every run,
 * spares included): the pipes are here-documents (a pipe each in dash, busybox and bash 5.1+),
 * opened once more for writing through /proc; a shell whose here-documents are files fails the start.
 * Not pasta (Debian's passt, 2023-03): run as root it cannot map its user namespace nor open
 * another process's, so it needs a user namespace around it, and so wrapped it was slower here,
 * cold (about 1.5x this set-up's time) and at the end (its exit takes the interface down on the
 * run's path).
 * Arguments: slirp4netns's path, then bwrap's argv. Every program is named by its path: it all
 * starts with an empty environment (no PATH).
 */
const SCRIPT = `slirp=$1
shift
exec 3<&0 4<<E
E
[ -p /proc/self/fd/4 ] || {
  echo "crewd: the run's isolated network could not be set up: /bin/sh's here-documents are not pipes (RUNNER_NETWORK=isolated)" >&2; exit 125; }
exec ${INFO_FD}>/proc/self/fd/4 ${GATE_FD}<<E
E
exec 7>/proc/self/fd/${GATE_FD} 8<<E
E
exec 9>/proc/self/fd/8
"$@" <&3 3<&- 4<&- 7>&- 8<&- 9>&- &
sandbox=$!
exec 3<&- ${INFO_FD}>&- ${GATE_FD}<&-
pid=
while read -r line <&4; do case $line in *'"child-pid": '*) pid=\${line#*: }; pid=\${pid%,};; esac; done
exec 4<&-
case $pid in ''|*[!0-9]*) exec 7>&- 8<&- 9>&-; wait "$sandbox"; exit $?;; esac
"$slirp" --mtu=65520 --disable-host-loopback --disable-dns --enable-sandbox --enable-seccomp \\
  --ready-fd=7 --exit-fd=8 --userns-path="/proc/$pid/ns/user" "$pid" tap0 </dev/null >/dev/null 2>&1 9>&- &
exec 7>&- 8<&-
wait "$sandbox"`;

export type NetworkTools = Record<Tool, string>;

/** The tools' paths, or what is missing and how to install it. */
export function findNetworkTools(searchPath = SYSTEM_PATH): { tools: NetworkTools } | { missing: string } {
  const found: Partial<NetworkTools> = {};
  const missing: string[] = [];
  for (const [tool, pkg] of Object.entries(TOOLS) as Array<[Tool, string]>) {
    const file = findOnPath(tool, searchPath);
    if (file) found[tool] = file;
    else missing.push(`${tool} (Debian package ${pkg})`);
  }
  if (missing.length > 0) return { missing: `${missing.join(', ')} not found in ${searchPath}` };
  return { tools: found as NetworkTools };
}

/** The link to the stack, then the host's IPv4 addresses now, each as an unreachable route, with the ranges always blocked. */
export function hostRoutes(): string {
  const addresses = Object.values(networkInterfaces())
    .flat()
    .filter((entry) => entry !== undefined && entry.family === 'IPv4' && !entry.internal)
    .map((entry) => `${entry?.address}/32`);
  const routes = [...new Set([...addresses, ...ALWAYS_BLOCKED])].map((prefix) => `route add unreachable ${prefix}`);
  return [...LINK, ...routes].join('\n');
}

export interface NetworkSetup {
  tools: NetworkTools;
}

const requireSetup = (setup: NetworkSetup | null): NetworkSetup => {
  if (!setup) throw new Error('RUNNER_NETWORK=isolated but the isolated network was not set up at start');
  return setup;
};

/**
 * bwrap's argv as it is spawned for each setting (CONTRACTS §12): unchanged for `on` (the host's
 * network) and `off` (bwrap's empty namespace, loopback only); inside the set-up above for `isolated`.
 */
export function networkCommand(network: RunnerNetwork, bwrap: readonly string[], setup: NetworkSetup | null): string[] {
  if (network !== 'isolated') return [...bwrap];
  const { tools } = requireSetup(setup);
  const [bwrapPath = '', ...args] = bwrap;
  return [
    '/bin/sh',
    '-c',
    SCRIPT,
    'crewd-network',
    tools.slirp4netns,
    bwrapPath,
    '--info-fd',
    String(INFO_FD),
    ...args,
  ];
}

/** What the sandbox's first shell runs before anything else, for this setting (`NETWORK_GATE` for `isolated`). */
export const networkGate = (network: RunnerNetwork): string => (network === 'isolated' ? NETWORK_GATE : '');

/**
 * The gate's arguments: `ip`'s path and its lines, the host's addresses read at each call (a spare
 * made now blocks those of now); none for the other settings.
 */
export function networkGateArguments(network: RunnerNetwork, setup: NetworkSetup | null): string[] {
  return network === 'isolated' ? [requireSetup(setup).tools.ip, hostRoutes()] : [];
}

/** Whether bwrap makes the sandbox's network namespace: for all but `on` (`isolated`'s is linked to slirp4netns). */
export const bwrapUnsharesNetwork = (network: RunnerNetwork): boolean => network !== 'on';
