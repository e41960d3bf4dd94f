import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { findOnPath, isExecutableFile } from '../program-search.js';
import { DEFAULT_RUN_LIMITS, type RunLimits } from '../run-limits.js';
import { SANDBOX_HOME, SANDBOX_TMP } from './home.js';
import { pidMaxPerNamespace } from './kernel.js';
import { bwrapUnsharesNetwork, type NetworkSetup, networkCommand, networkGate } from './network.js';
import { assertExportable, SPARE_SHELL, spareLine } from './spare-shell.js';
import type { Confinement, ProcessPlan, RunnerNetwork, Sandbox, SpareShape, WrappedPlan } from './types.js';
import { installationFolder, machineView, nodeFolder, pythonsOf, realFolder, within } from './view.js';

/** Where the limits are applied and the capabilities dropped: util-linux, on every Debian and Ubuntu. */
const SYSTEM_PATH = '/usr/bin:/bin:/usr/sbin:/sbin';

export interface BubblewrapOptions {
  /** Absolute path of the bwrap binary. */
  bwrapPath: string;
  network: RunnerNetwork;
  /** What RUNNER_NETWORK=isolated needs (found at start); null for the other settings. */
  networkSetup?: NetworkSetup | null | undefined;
  /** crewd's data folder, hidden from runners except for the folders bound back in. */
  dataDir: string;
  /** Other folders of crewd hidden the same way (BUILD_CACHE_DIR when it lies outside DATA_DIR). */
  hidden?: string[] | undefined;
  /** RUNNER_EXTRA_PATHS: more folders shown read-only (command versions' programs). */
  extraPaths?: string[] | undefined;
  /** Installation folders of the runtimes found at start (the Python builds use), shown read-only. */
  runtimes?: string[] | undefined;
  limits?: RunLimits | undefined;
}

const MIB = 1024 * 1024;
/** The kernel numbers a PID namespace's first 300 processes apart from those it reuses after wrapping. */
const RESERVED_PIDS = 300;
/** Between SIGXCPU at RUN_CPU_SECONDS and SIGKILL. */
const CPU_GRACE_SECONDS = 5;

function requiredTool(name: string): string {
  const found = findOnPath(name, SYSTEM_PATH);
  if (!found) throw new Error(`${name} (util-linux) was not found in ${SYSTEM_PATH}: the sandbox needs it for limits`);
  return found;
}

/**
 * What runs first in the sandbox, with the capabilities of its user namespace: it does what the
 * network needs there (network.ts: for `isolated`, its routes and the wait for the stack; `gate`
 * and its arguments), bounds the PID namespace (per-namespace pid_max, Linux 6.14 and newer, never the machine's;
 * RLIMIT_NPROC does not bind root), covers the kernel's settings for crewd as root (kernelSettingsCover), sets the
 * run's limits and drops every capability, so that nothing after it can undo a mount or a route.
 */
function initPrefix(limits: RunLimits, gate: { script: string; args: string[] }): string[] {
  const cpu = limits.cpuSeconds;
  const pidMax = pidMaxPerNamespace()
    ? `echo ${limits.processes + RESERVED_PIDS} > /proc/sys/kernel/pid_max 2>/dev/null; `
    : '';
  return [
    '/bin/sh',
    '-c',
    `${gate.script}${pidMax}${kernelSettingsCover()}exec "$@"`,
    'sh',
    ...gate.args,
    requiredTool('prlimit'),
    `--cpu=${cpu}:${cpu + CPU_GRACE_SECONDS}`,
    `--data=${limits.memoryMb * MIB}`,
    `--nproc=${limits.processes}`,
    '--',
    requiredTool('setpriv'),
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
    '--',
  ];
}

/**
 * The kernel's settings (/proc/sys) read-only, for crewd as root: a run is then the machine's user 0 (without
 * capabilities), and the kernel lets user 0 write most settings whatever its capabilities (core_pattern would hand
 * the host over). bwrap leaves /proc/sys open because the folder itself is not writable. Made while the first program
 * still has its user namespace's capabilities; setpriv then drops them, so nothing in the sandbox can undo it.
 * Another user cannot write the machine's settings anyway.
 */
function kernelSettingsCover(): string {
  if (process.getuid?.() !== 0) return '';
  // The sandbox's user 0 is the machine's when its uid_map reads `0 0 1` (not when crewd starts bwrap as another user).
  const cover = `${requiredTool('mount')} -o bind,ro /proc/sys /proc/sys || exit 125`;
  return `read -r _ outer _ < /proc/self/uid_map; if [ "$outer" = 0 ]; then ${cover}; fi; `;
}

/**
 * Where a notRoot sandbox of crewd as root holds a proc mount as open, read-only, under a cover (notRootPrefix).
 */
const OPEN_PROC_COVER = '/.crewd';
const OPEN_PROC = `${OPEN_PROC_COVER}/proc`;

/**
 * Confinement.notRoot when crewd runs as root: before setpriv, with the capabilities the sandbox's user namespace
 * has, one more user namespace in which the process is user 1000 (not root), so that its own user namespaces may
 * map its user (mapping root needs CAP_SETFCAP, which setpriv drops).
 *
 * And a second proc mount, read-only, at OPEN_PROC, covered at once (nothing in the sandbox can reach it): as root,
 * bwrap covers /proc/irq and /proc/bus, and the kernel gives a user namespace made in the sandbox a fresh /proc only
 * where a proc mount with no such cover is in its mount table (the environment server's version servers mount their
 * own /proc so). Covered, it shows nothing; read-only, the fresh /proc it allows is read-only too. Where the mount
 * fails, the sandbox goes on without it (version servers then get an empty /proc); where the cover fails, it stops.
 */
function notRootPrefix(prefix: string[]): string[] {
  if (process.getuid?.() !== 0) return prefix;
  const mount = requiredTool('mount');
  const openProc =
    `if ${mount} -t proc -o ro,nosuid,nodev,noexec proc ${OPEN_PROC} 2>/dev/null; ` +
    `then ${mount} -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,mode=0 cover ${OPEN_PROC_COVER} || exit 125; fi; `;
  const [shell, flag, script, ...rest] = prefix;
  const at = prefix.indexOf(requiredTool('setpriv'));
  const unshare = [requiredTool('unshare'), '--user', '--map-user=1000', '--map-group=1000', '--'];
  const withProc = [shell as string, flag as string, `${openProc}${script as string}`, ...rest];
  return [...withProc.slice(0, at), ...unshare, ...withProc.slice(at)];
}

/** bwrap's arguments for notRootPrefix's proc mount: its folder, before the root is sealed. */
const notRootFolders = (confinement: Confinement): string[] =>
  confinement.notRoot && process.getuid?.() === 0 ? ['--dir', OPEN_PROC] : [];

/**
 * The namespaces every runner gets (CONTRACTS §12): its own user (its capabilities dropped by
 * initPrefix), PID, IPC and UTS namespaces, and the network's.
 */
function namespaceArguments(network: RunnerNetwork): string[] {
  const args = ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
  if (bwrapUnsharesNetwork(network)) args.push('--unshare-net');
  args.push('--die-with-parent');
  return args;
}

/** Fresh /proc and /dev, and the size-bounded /tmp and home of the process's own. */
function freshArguments(limits: RunLimits): string[] {
  return [
    ...['--proc', '/proc', '--dev', '/dev'],
    ...['--size', String(limits.tmpMb * MIB), '--tmpfs', SANDBOX_TMP],
    ...['--size', String(limits.homeMb * MIB), '--tmpfs', SANDBOX_HOME],
  ];
}

/** Last of the mounts: the sandbox's root, where bwrap made the mount points, is read-only too. */
const SEAL = ['--remount-ro', '/'];

/** crewd's folders, made if missing, as real paths. */
function hiddenFolders(options: BubblewrapOptions): string[] {
  return [options.dataDir, ...(options.hidden ?? [])].map((folder) => {
    mkdirSync(folder, { recursive: true });
    return realFolder(folder);
  });
}

/**
 * Fails as a plain spawn would when the program is nowhere the sandbox shows: inside, bwrap could
 * only report it as its own exit code 1. Its folder, and any file or folder the command names, must be in view.
 */
function assertInView(
  plan: ProcessPlan,
  cwd: string,
  shown: (file: string) => boolean,
  around: (folder: string) => boolean,
): void {
  const [program = '', ...args] = plan.command;
  const found = program.includes('/')
    ? isExecutableFile(path.resolve(cwd, program)) && path.resolve(cwd, program)
    : (plan.env.PATH ?? '')
        .split(':')
        .filter((folder) => folder !== '' && shown(realFolder(folder)))
        .map((folder) => findOnPath(program, folder))
        .find((file) => file !== null);
  if (!found) {
    const elsewhere = !program.includes('/') && findOnPath(program, plan.env.PATH ?? '');
    const detail = elsewhere ? `: ${elsewhere} is not in the sandbox's view (see RUNNER_EXTRA_PATHS)` : '';
    throw Object.assign(new Error(`spawn ${program} ENOENT${detail}`), { code: 'ENOENT' });
  }
  const named = args.filter((arg) => path.isAbsolute(arg) && existsSync(arg));
  // A file is in view where its folder is (a link to a shown file from elsewhere is not), and where it leads.
  const files = [found, ...named.filter((file) => !statSync(file).isDirectory())];
  const checked = [...files, ...files.map(path.dirname), ...named];
  // A working folder above shown ones is there too (bwrap makes it, holding only the way to them).
  const outside =
    checked.find((file) => !shown(realFolder(file))) ??
    (shown(realFolder(cwd)) || around(realFolder(cwd)) ? undefined : cwd);
  if (outside !== undefined) {
    throw Object.assign(
      new Error(`${outside} is not in the sandbox's view: list its folder in RUNNER_EXTRA_PATHS to show it to runners`),
      { code: 'ENOENT' },
    );
  }
}

/** Which folder on disk a path is now (device and inode), or `gone`. */
/**
 * Which folder is at this path now: a folder removed and made again is another one, though the file system may give
 * it the same inode at once (seen on PostgreSQL's CI suite: a spare bound to the removed folder was taken), so its
 * birth time (or, where the file system keeps none, its change time) is part of it.
 */
export function folderIdentity(folder: string): string {
  const stats = statSync(folder, { throwIfNoEntry: false, bigint: true });
  if (!stats) return 'gone';
  const born = stats.birthtimeNs > 0n ? stats.birthtimeNs : stats.ctimeNs;
  return `${stats.dev}:${stats.ino}:${born}`;
}

/** Runners in Linux namespaces through bubblewrap, seeing only what CONTRACTS §12 shows them. */
export function createBubblewrapSandbox(options: BubblewrapOptions): Sandbox {
  const limits = options.limits ?? DEFAULT_RUN_LIMITS;
  const hidden = hiddenFolders(options);
  /** What runs first in a sandbox of each network (initPrefix); `isolated`'s routes are read at each call. */
  const plain = { script: '', args: [] };
  const prefixes = { on: initPrefix(limits, plain), off: initPrefix(limits, plain) };
  const prefixFor = (network: RunnerNetwork): string[] =>
    network === 'isolated' ? initPrefix(limits, networkGate(network, options.networkSetup ?? null)) : prefixes[network];
  const extra = options.extraPaths ?? [];
  const view = machineView(
    [installationFolder(), nodeFolder(), ...(options.runtimes ?? []), ...extra, ...extra.flatMap(pythonsOf)],
    path.join(hidden[0] as string, '.sandbox-empty'),
  );
  // crewd's folders inside the view (DATA_DIR in its installation folder) are hidden after it.
  const hiding = hidden
    .filter((folder) => view.shown.some((shown) => within(folder, shown)))
    .flatMap((folder) => ['--tmpfs', folder]);
  // The fresh /tmp first: a folder shown from under the host's /tmp (an installation there) goes over it.
  const common = [...freshArguments(limits), ...view.args, ...hiding];
  /** DATA_DIR/runs, where scratch folders are, as the sandbox sees it (the same path). */
  const runsFolder = path.join(realFolder(options.dataDir), 'runs');
  /** bwrap's argv in the network the process gets (network.ts). */
  const withNetwork = (confinement: Confinement, bwrap: string[]) =>
    networkCommand(confinement.network ?? options.network, bwrap, options.networkSetup ?? null);

  /** Everything but the writable folders: the same for every run of a version. */
  function readOnlyArguments(plan: ProcessPlan, cwd: string, confinement: Confinement): string[] {
    const args = [...namespaceArguments(confinement.network ?? options.network), ...common];
    const readOnly = confinement.readOnly.map(realFolder);
    const runtimes = readOnly.flatMap(pythonsOf).filter((folder) => !view.shown.some((shown) => within(folder, shown)));
    for (const folder of [...new Set(runtimes), ...readOnly]) args.push('--ro-bind', folder, folder);
    for (const file of confinement.homeFiles ?? []) {
      args.push('--ro-bind', file.source, path.join(SANDBOX_HOME, file.target));
    }
    const writable = confinement.writable.map(realFolder);
    const visible = [...view.shown, ...runtimes, ...readOnly, ...writable];
    assertInView(
      plan,
      cwd,
      (file) => visible.some((folder) => within(file, folder)),
      (folder) => visible.some((shown) => within(shown, folder)),
    );
    return args;
  }

  /**
   * bwrap's plan: the read-only arguments, then the writable folders, then the sandbox's shell in
   * the process's folder. Everything on the host starts with an empty environment (an admin's
   * LD_PRELOAD would load a library there); the process gets exactly its own through `line`.
   */
  function wrapped(plan: ProcessPlan, readOnly: readonly string[], confinement: Confinement): WrappedPlan {
    assertExportable(plan.env);
    const cwd = path.resolve(plan.cwd);
    const args = [...readOnly];
    for (const folder of confinement.writable) {
      const real = realFolder(folder);
      args.push('--bind', real, real);
    }
    const network = confinement.network ?? options.network;
    const prefix = confinement.notRoot ? notRootPrefix(prefixFor(network)) : prefixFor(network);
    args.push(...notRootFolders(confinement), ...SEAL, '--chdir', cwd, '--', ...prefix, ...SPARE_SHELL);
    const command = withNetwork(confinement, [options.bwrapPath, ...args]);
    return { command, cwd, env: {}, line: spareLine({ ...plan, cwd }) };
  }

  return {
    kind: 'bubblewrap',
    wrap(plan: ProcessPlan, confinement: Confinement): WrappedPlan {
      return wrapped(plan, readOnlyArguments(plan, path.resolve(plan.cwd), confinement), confinement);
    },

    spareShape(plan: ProcessPlan, confinement: Confinement): SpareShape | null {
      const cwd = realFolder(plan.cwd);
      const [writable, ...more] = confinement.writable.map(realFolder);
      const scratch = writable !== undefined && writable === cwd && path.dirname(cwd) === runsFolder ? cwd : null;
      if (more.length > 0 || (writable !== undefined && !scratch) || confinement.notRoot) return null;
      assertExportable(plan.env);
      const args = readOnlyArguments(plan, cwd, confinement);
      // stat follows links, so the folders as given name the same files as their real paths (found above already).
      const bound = [cwd, ...confinement.readOnly].filter((folder) => folder !== scratch);
      // A scratch folder is made in the spare's own folder, seen as DATA_DIR/runs in there.
      const bindRuns = (folder: string) => (scratch ? ['--bind', realFolder(folder), runsFolder] : []);
      return {
        key: JSON.stringify([scratch !== null, args]),
        // An empty environment: the shell gets the process's own with its line.
        spare: (folder) => ({
          command: withNetwork(confinement, [
            options.bwrapPath,
            ...args,
            ...bindRuns(folder),
            ...SEAL,
            '--chdir',
            '/',
            '--',
            ...prefixFor(confinement.network ?? options.network),
            ...SPARE_SHELL,
          ]),
          cwd: '/',
          env: {},
        }),
        line: spareLine({ ...plan, cwd }),
        scratch,
        fresh: () => wrapped(plan, args, confinement),
        stamp: () => bound.map(folderIdentity).join(' '),
      };
    },
  };
}
