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

/** The descriptor on which the sandbox's first program says it started (a copy of bwrap's info pipe). */
const STARTED_FD = 3;
/** The descriptor on which bwrap writes its child's pid (JSON, --info-fd). */
const INFO_FD = 5;
/** The descriptor on which the sandbox's first program gets the stack's readiness, and closes. */
const GATE_FD = 6;
/** The write end of the stack's --exit-fd, held by the set-up's shell while bwrap runs. */
const EXIT_FD = 9;

/**
 * What the sandbox runs first under `isolated`, before anything of the process, with bwrap's one
 * capability (CAP_NET_ADMIN over the sandbox's network): it says it started on STARTED_FD (bwrap's
 * own loopback set-up is done: the stack may come), has `ip` bring the loopback up and make every
 * address of the host unreachable by a route (arguments 1 and 2: ip's path and its lines) while
 * the stack starts, then waits until slirp4netns says the network is up (it writes `1`), or fails
 * the start when the stack ended without saying so. It closes every descriptor of the set-up,
 * which the process never gets. initPrefix then drops every capability, so the run cannot remove
 * the routes.
 */
const NETWORK_GATE = `echo >&${STARTED_FD}; exec ${STARTED_FD}>&- ${EXIT_FD}>&-; "$1" -batch - <<E || { echo "crewd: the run's isolated network could not be set up: ip could not set its routes (RUNNER_NETWORK=isolated)" >&2; exit 125; }
$2
E
shift 2; { read -r up <&${GATE_FD}; [ "$up" = 1 ]; } || { echo "crewd: the run's isolated network could not be set up: slirp4netns did not start (RUNNER_NETWORK=isolated)" >&2; exit 125; }; exec ${GATE_FD}<&-; `;

/**
 * Sets up the run's own network beside bwrap, on the host, as crewd's user, with one shell: bwrap
 * makes the sandbox's user and network namespaces itself (--unshare-net, as uid 0 in there, so
 * that its first program has CAP_NET_ADMIN over that network: bwrap run by a user other than root
 * would otherwise make a second user namespace inside, without it) and writes its child's pid on
 * INFO_FD. Once the sandbox's first program has said on the same pipe that it started
 * (NETWORK_GATE; after bwrap's own loopback set-up, which slirp4netns's would race with), a subshell
 * becomes slirp4netns, the user-mode stack, attached to that child's namespaces (the internet
 * through host sockets; neither the host's loopback nor its DNS forwarder: --disable-host-loopback
 * --disable-dns). The stack writes its readiness straight to the sandbox's first program, which
 * waits for it before the process can start, so a run never sees a network that is not up yet.
 * The stack ends with the sandbox: its --exit-fd is held by this shell (bwrap closes what it was
 * given, and the process must not get it), which exits as bwrap does, without waiting for the
 * stack to take its interface down (some 20 ms on the run's path).
 * Every program started here costs CPU on every sandbox, spares included: the pipes are
 * here-documents (a pipe each in dash, busybox and bash 5.1+; a shell whose here-documents are
 * files fails the start), opened once more for writing through /proc, not fifos (mkfifo and rm
 * were two programs more); there is no `unshare` and no shell inside it (as there was before:
 * about 2 ms of CPU more per sandbox).
 * Not pasta (Debian's passt, 2023-03): run as root it cannot map its user namespace nor open
 * another process's, so it needs a user namespace around it, and so wrapped it was slower here,
 * cold (about 1.5x this set-up's time) and at the end (its exit takes the interface down on the
 * run's path).
 * Arguments: slirp4netns's path, then bwrap's argv. Every program is named by its path: it all
 * starts with an empty environment (no PATH).
 */
const SCRIPT = `slirp=$1
shift
exec 4<<E
E
[ -p /proc/self/fd/4 ] || {
  echo "crewd: the run's isolated network could not be set up: /bin/sh's here-documents are not pipes (RUNNER_NETWORK=isolated)" >&2; exit 125; }
exec ${INFO_FD}>/proc/self/fd/4 ${STARTED_FD}>&${INFO_FD} ${GATE_FD}<<E
E
exec 7>/proc/self/fd/${GATE_FD} 8<<E
E
exec ${EXIT_FD}>/proc/self/fd/8
{
  exec ${STARTED_FD}>&- ${INFO_FD}>&- ${GATE_FD}<&- ${EXIT_FD}>&-
  pid= started=
  while read -r line; do
    case $line in
      '"child-pid": '*) pid=\${line#*: }; pid=\${pid%,} ;;
      '') started=1; break ;;
    esac
  done <&4
  [ -n "$started" ] && [ -n "$pid" ] || exit 0
  exec 4<&- "$slirp" --configure --mtu=65520 --disable-host-loopback --disable-dns --enable-sandbox --enable-seccomp \\
    --ready-fd=7 --exit-fd=8 --userns-path="/proc/$pid/ns/user" "$pid" tap0 </dev/null >/dev/null 2>&1
} &
exec 4<&- 7>&- 8<&-
"$@"
exit $?`;

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
 * `isolated`, with bwrap making the network namespace, as uid 0, its first program keeping
 * CAP_NET_ADMIN (for NETWORK_GATE, which drops it with every other) and its child's pid on INFO_FD.
 */
export function networkCommand(network: RunnerNetwork, bwrap: readonly string[], setup: NetworkSetup | null): string[] {
  if (network !== 'isolated') return [...bwrap];
  if (!setup) throw new Error('RUNNER_NETWORK=isolated but the isolated network was not set up at start');
  const [bwrapPath = '', ...args] = bwrap;
  const own = ['--unshare-net', '--uid', '0', '--gid', '0', '--cap-add', 'CAP_NET_ADMIN', '--info-fd', String(INFO_FD)];
  return ['/bin/sh', '-c', SCRIPT, 'crewd-network', setup.tools.slirp4netns, bwrapPath, ...own, ...args];
}

/**
 * What the sandbox's first shell runs before anything else, for this setting (`NETWORK_GATE` for
 * `isolated`), with the arguments it takes before the process's own: ip's path and its lines, the
 * host's addresses read at each call (a spare made now blocks those of now).
 */
export function networkGate(network: RunnerNetwork, setup: NetworkSetup | null): { script: string; args: string[] } {
  if (network !== 'isolated') return { script: '', args: [] };
  if (!setup) throw new Error('RUNNER_NETWORK=isolated but the isolated network was not set up at start');
  return { script: NETWORK_GATE, args: [setup.tools.ip, hostRoutes()] };
}

/** Whether bwrap is told to make the sandbox's network namespace by its own arguments: for `off` (`isolated` adds it in networkCommand). */
export const bwrapUnsharesNetwork = (network: RunnerNetwork): boolean => network === 'off';
