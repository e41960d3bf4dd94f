import { networkInterfaces } from 'node:os';
import { findOnPath } from '../program-search.js';
import type { RunnerNetwork } from './types.js';

/** Where the programs the isolated network needs are looked for: never the runner's own PATH. */
const SYSTEM_PATH = '/usr/bin:/bin:/usr/sbin:/sbin';

/** The programs, each with the Debian package that has it. */
const TOOLS = {
  unshare: 'util-linux',
  slirp4netns: 'slirp4netns',
  ip: 'iproute2',
} as const;
type Tool = keyof typeof TOOLS;

/** Addresses no run reaches besides the host's own: link-local, where clouds keep their metadata service. */
const ALWAYS_BLOCKED = ['169.254.0.0/16'];

/** The descriptor on which the sandbox's first program gets the stack's readiness, and closes. */
const GATE_FD = 6;

/**
 * What the sandbox runs first under `isolated`, before anything of the process: it waits until
 * slirp4netns says the network is up (it writes `1`), or fails the start when the stack ended
 * without saying so; then it closes the descriptor, which the process never gets.
 */
const NETWORK_GATE = `{ read -r up <&${GATE_FD}; [ "$up" = 1 ]; } || { echo "crewd: the run's isolated network could not be set up: slirp4netns did not start (RUNNER_NETWORK=isolated)" >&2; exit 125; }; exec ${GATE_FD}<&-; `;

/**
 * Sets up the run's own network namespace before bwrap starts, on the host, as crewd's user:
 * `unshare` makes a user and a network namespace; in there a shell says so, has `ip` bring the
 * loopback up and make every address of the host unreachable by a route, which the run cannot
 * remove (bwrap's user namespace inside has no capability over this network), and starts bwrap,
 * mapping crewd's user back to its own id (in the namespace made here, it is root). Meanwhile
 * slirp4netns, the user-mode stack, is attached to that namespace (the internet through host
 * sockets; neither the host's loopback nor its DNS forwarder: --disable-host-loopback
 * --disable-dns): bwrap's set-up and the stack's start overlap. The stack writes its readiness
 * straight to the sandbox's first program (`NETWORK_GATE`), which waits for it before the process
 * can start, so a run never sees a network that is not up yet.
 * The stack ends with the sandbox: its --exit-fd is held by this shell, which exits as the sandbox
 * does, without waiting for the stack to take its interface down (some 20 ms on the run's path).
 * Every program started here costs CPU on every sandbox, spares included: the pipes are
 * here-documents (a pipe each in dash, busybox and bash 5.1+; a shell whose here-documents are
 * files fails the start), opened once more for writing through /proc, not fifos (mkfifo and rm
 * were two programs more), and `ip` reads its lines from one, not from printf (a fork).
 * Not bwrap's own network namespace (--unshare-net, with slirp4netns attached by the pid bwrap
 * says on --info-fd): as root that saved unshare and this inner shell, but bwrap run by another
 * user makes a second user namespace inside, so its first program has no capability over that
 * network, and slirp4netns's setns raced with it.
 * Not pasta (Debian's passt, 2023-03): run as root it cannot map its user namespace nor open
 * another process's, so it needs a user namespace around it, and so wrapped it was slower here,
 * cold (about 1.5x this set-up's time) and at the end (its exit takes the interface down on the
 * run's path).
 * Arguments: the tools' paths, the `ip -batch` lines, then bwrap's argv. Every program is named by
 * its path: it all starts with an empty environment (no PATH).
 */
const SCRIPT = `unshare=$1 slirp=$2 ip=$3 routes=$4
shift 4
exec 3<&0 4<<E
E
[ -p /proc/self/fd/4 ] || {
  echo "crewd: the run's isolated network could not be set up: /bin/sh's here-documents are not pipes (RUNNER_NETWORK=isolated)" >&2; exit 125; }
exec 5>/proc/self/fd/4 ${GATE_FD}<<E
E
exec 7>/proc/self/fd/${GATE_FD} 8<<E
E
exec 9>/proc/self/fd/8
"$unshare" --user --map-root-user --net /bin/sh -c 'echo >&5; exec 5>&-; "$1" -batch - <<E || exit 125
$0
E
shift; exec "$@"' "$routes" "$ip" "$@" <&3 3<&- 4<&- 7>&- 8<&- 9>&- &
sandbox=$!
exec 3<&- 5>&- ${GATE_FD}<&-
if ! read -r _ <&4; then exec 4<&- 7>&- 8<&- 9>&-; wait "$sandbox"; exit $?; fi
exec 4<&-
"$slirp" --configure --mtu=65520 --disable-host-loopback --disable-dns --enable-sandbox --enable-seccomp \\
  --ready-fd=7 --exit-fd=8 --userns-path="/proc/$sandbox/ns/user" "$sandbox" tap0 </dev/null >/dev/null 2>&1 9>&- &
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

/** The host's IPv4 addresses now, each as an unreachable route, with the ranges always blocked. */
export function hostRoutes(): string {
  const addresses = Object.values(networkInterfaces())
    .flat()
    .filter((entry) => entry !== undefined && entry.family === 'IPv4' && !entry.internal)
    .map((entry) => `${entry?.address}/32`);
  const routes = [...new Set([...addresses, ...ALWAYS_BLOCKED])].map((prefix) => `route add unreachable ${prefix}`);
  return ['link set lo up', ...routes].join('\n');
}

export interface NetworkSetup {
  tools: NetworkTools;
}

/**
 * bwrap's argv as it is spawned for each setting (CONTRACTS §12): unchanged for `on` (the host's
 * network) and `off` (bwrap's empty namespace, loopback only); inside the set-up above for
 * `isolated`. The host's addresses are read at each call: a spare made now blocks those of now.
 */
export function networkCommand(network: RunnerNetwork, bwrap: readonly string[], setup: NetworkSetup | null): string[] {
  if (network !== 'isolated') return [...bwrap];
  if (!setup) throw new Error('RUNNER_NETWORK=isolated but the isolated network was not set up at start');
  const { tools } = setup;
  const [bwrapPath = '', ...args] = bwrap;
  const ids = ['--uid', String(process.getuid?.() ?? 0), '--gid', String(process.getgid?.() ?? 0)];
  return [
    '/bin/sh',
    '-c',
    SCRIPT,
    'crewd-network',
    tools.unshare,
    tools.slirp4netns,
    tools.ip,
    hostRoutes(),
    bwrapPath,
    ...ids,
    ...args,
  ];
}

/** What the sandbox's first shell runs before anything else, for this setting (`NETWORK_GATE` for `isolated`). */
export const networkGate = (network: RunnerNetwork): string => (network === 'isolated' ? NETWORK_GATE : '');

/** Whether bwrap makes the sandbox's network namespace itself: for `off` (`isolated` has made its own before). */
export const bwrapUnsharesNetwork = (network: RunnerNetwork): boolean => network === 'off';
