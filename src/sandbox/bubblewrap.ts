import { existsSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { findOnPath, isExecutableFile } from '../program-search.js';
import { exportable, SPARE_SHELL, spareLine } from './spare-shell.js';
import type { Confinement, ProcessPlan, RunnerNetwork, Sandbox, SpareShape } from './types.js';

/** Where systemd-resolved keeps the resolv.conf that /etc/resolv.conf may point to. */
const RESOLVER_FOLDER = '/run/systemd/resolve';

export interface BubblewrapOptions {
  /** Absolute path of the bwrap binary. */
  bwrapPath: string;
  network: RunnerNetwork;
  /** crewd's data folder, hidden from runners except for the folders bound back in. */
  dataDir: string;
  /** Other folders of crewd hidden the same way (BUILD_CACHE_DIR when it lies outside DATA_DIR). */
  hidden?: string[] | undefined;
}

/** The folder's real path, so a bind lands where the hidden folder's symlinks lead. */
function realFolder(folder: string): string {
  const absolute = path.resolve(folder);
  try {
    // The system's realpath: one call, where Node's own looks at each part of the path.
    return realpathSync.native(absolute);
  } catch {
    return absolute;
  }
}

/**
 * Fails as a plain spawn would when the program is nowhere to be found: inside, bwrap could only
 * report it as its own exit code 1. What the sandbox sees is a part of what this process sees.
 */
function assertProgramExists(program: string, cwd: string, searchPath: string): void {
  const found = program.includes('/')
    ? isExecutableFile(path.resolve(cwd, program))
    : findOnPath(program, searchPath) !== null;
  if (found) return;
  throw Object.assign(new Error(`spawn ${program} ENOENT`), { code: 'ENOENT' });
}

/**
 * The namespaces and mounts every runner gets (CONTRACTS §12), before its own folders:
 * its own user (all capabilities dropped, so it cannot undo a mount), PID, IPC and UTS
 * namespaces; the machine read-only; fresh /proc, /dev and /tmp.
 */
function leadingArguments(network: RunnerNetwork): string[] {
  const args = ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
  if (network === 'off') args.push('--unshare-net');
  args.push('--die-with-parent', '--cap-drop', 'ALL');
  args.push('--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
  return args;
}

/** crewd's folders, made if missing (a mount point must exist before bwrap makes the root read-only), as real paths. */
function hiddenFolders(options: BubblewrapOptions): string[] {
  return [options.dataDir, ...(options.hidden ?? [])].map((folder) => {
    mkdirSync(folder, { recursive: true });
    return realFolder(folder);
  });
}

/** Then /run (service sockets such as PostgreSQL's or Docker's) and crewd's folders hidden under empty tmpfs. */
function hidingArguments(hidden: readonly string[]): string[] {
  const args: string[] = [];
  if (existsSync('/run')) args.push('--tmpfs', '/run');
  // DNS keeps working on hosts whose /etc/resolv.conf links into /run.
  if (existsSync(RESOLVER_FOLDER)) args.push('--ro-bind', RESOLVER_FOLDER, RESOLVER_FOLDER);
  for (const folder of hidden) args.push('--tmpfs', folder);
  return args;
}

const HOST_TMP = '/tmp';
const underHostTmp = (file: string) => file === HOST_TMP || file.startsWith(`${HOST_TMP}/`);

/**
 * The folders under the host's /tmp that the command names (its program, a script, its cwd, its
 * PYTHONPATH):
 * the sandbox's /tmp is its own, so these are bound back read-only, at the same paths, for a
 * command version (or a checkout) that lives there. Folders inside the hidden ones (DATA_DIR) are
 * left out: they would be hidden after them all the same.
 */
function hostTmpFolders(plan: ProcessPlan, cwd: string, hidden: readonly string[]): string[] {
  const folders = new Set<string>();
  if (underHostTmp(cwd) && existsSync(cwd)) folders.add(realFolder(cwd));
  for (const arg of plan.command) {
    if (!arg.includes('/')) continue;
    const file = path.resolve(cwd, arg);
    if (underHostTmp(file) && existsSync(file)) folders.add(realFolder(path.dirname(file)));
  }
  for (const entry of (plan.env.PYTHONPATH ?? '').split(':')) {
    if (entry !== '' && underHostTmp(path.resolve(cwd, entry)) && existsSync(path.resolve(cwd, entry))) {
      folders.add(realFolder(path.resolve(cwd, entry)));
    }
  }
  folders.delete(HOST_TMP);
  const inHidden = (folder: string) => hidden.some((root) => folder === root || folder.startsWith(`${root}/`));
  return [...folders].filter((folder) => !inHidden(folder));
}

/** Which folder on disk a path is now (device and inode), or `gone`. */
function identity(folder: string): string {
  const stats = statSync(folder, { throwIfNoEntry: false });
  return stats ? `${stats.dev}:${stats.ino}` : 'gone';
}

/** Runners in Linux namespaces through bubblewrap. */
export function createBubblewrapSandbox(options: BubblewrapOptions): Sandbox {
  const hidden = hiddenFolders(options);
  const hiding = hidingArguments(hidden);
  /** DATA_DIR/runs, where scratch folders are, as the sandbox sees it (the same path). */
  const runsFolder = path.join(realFolder(options.dataDir), 'runs');
  /** Spares wait in the machine's shell: none without one. */
  const withShell = isExecutableFile(SPARE_SHELL[0] as string);

  /** Everything but the writable folders: the same for every run of a version. */
  function readOnlyArguments(plan: ProcessPlan, cwd: string, confinement: Confinement): string[] {
    assertProgramExists(plan.command[0] ?? '', cwd, plan.env.PATH ?? '');
    const args = leadingArguments(confinement.network ?? options.network);
    for (const folder of hostTmpFolders(plan, cwd, hidden)) args.push('--ro-bind', folder, folder);
    args.push(...hiding);
    for (const folder of confinement.readOnly) {
      const real = realFolder(folder);
      args.push('--ro-bind', real, real);
    }
    return args;
  }

  /** bwrap's plan: the read-only arguments, then the writable folders, then the command in its folder. */
  function wrapped(plan: ProcessPlan, readOnly: readonly string[], confinement: Confinement): ProcessPlan {
    const cwd = path.resolve(plan.cwd);
    const args = [...readOnly];
    for (const folder of confinement.writable) {
      const real = realFolder(folder);
      args.push('--bind', real, real);
    }
    args.push('--chdir', cwd, '--', ...plan.command);
    // bwrap passes its own environment on unchanged, so the runner gets exactly plan.env.
    return { command: [options.bwrapPath, ...args], cwd, env: plan.env };
  }

  return {
    kind: 'bubblewrap',
    wrap(plan: ProcessPlan, confinement: Confinement): ProcessPlan {
      return wrapped(plan, readOnlyArguments(plan, path.resolve(plan.cwd), confinement), confinement);
    },

    spareShape(plan: ProcessPlan, confinement: Confinement): SpareShape | null {
      if (!withShell) return null;
      const cwd = realFolder(plan.cwd);
      const [writable, ...more] = confinement.writable.map(realFolder);
      const scratch = writable !== undefined && writable === cwd && path.dirname(cwd) === runsFolder ? cwd : null;
      if (more.length > 0 || (writable !== undefined && !scratch) || !exportable(plan.env)) return null;
      const args = readOnlyArguments(plan, cwd, confinement);
      // stat follows links, so the folders as given name the same files as their real paths (found above already).
      const bound = [cwd, ...confinement.readOnly].filter((folder) => folder !== scratch);
      // A scratch folder is made in the spare's own folder, seen as DATA_DIR/runs in there.
      const bindRuns = (folder: string) => (scratch ? ['--bind', realFolder(folder), runsFolder] : []);
      return {
        key: JSON.stringify([scratch !== null, args]),
        // An empty environment: the shell gets the process's own with its line.
        spare: (folder) => ({
          command: [options.bwrapPath, ...args, ...bindRuns(folder), '--chdir', '/', '--', ...SPARE_SHELL],
          cwd: '/',
          env: {},
        }),
        line: spareLine({ ...plan, cwd }),
        scratch,
        fresh: () => wrapped(plan, args, confinement),
        stamp: () => bound.map(identity).join(' '),
      };
    },
  };
}
