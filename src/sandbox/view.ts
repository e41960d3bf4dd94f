import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What of the machine a sandbox shows (CONTRACTS §12 "Files"): the system's programs and libraries,
 * /etc without its secrets, /opt, crewd's own installation and the runtimes it runs, read-only.
 * Nothing else of the host: no /root or /home, no /var, /run, /srv, /mnt or /media, no DATA_DIR.
 */

/** Top-level folders shown read-only; those that are links (a merged /usr) stay links. */
const SYSTEM_FOLDERS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'];

/** Secrets of /etc masked whatever their modes: files by an empty file, folders by an empty tmpfs. */
const ETC_SECRETS = [
  'shadow',
  'shadow-',
  'gshadow',
  'gshadow-',
  'sudoers',
  'sudoers.d',
  'ssh',
  'ssl/private',
  'security/opasswd',
  'krb5.keytab',
  'subuid-',
  'subgid-',
];
/** How deep /etc is searched for entries other users may not read (secrets by their modes). */
const ETC_DEPTH = 3;

/** Where a sandbox's links of /etc may lead that the view shows anyway. */
const RESOLVER_FOLDER = '/run/systemd/resolve';

/** The folder's real path, so a bind lands where the hidden folder's symlinks lead. */
export function realFolder(folder: string): string {
  const absolute = path.resolve(folder);
  try {
    // The system's realpath: one call, where Node's own looks at each part of the path.
    return realpathSync.native(absolute);
  } catch {
    return absolute;
  }
}

/** Whether `file` is `folder` or lies inside it. */
export const within = (file: string, folder: string) =>
  file === folder || file.startsWith(folder === '/' ? '/' : `${folder}/`);

/** crewd's own installation folder (the repository root: its runners and examples), from src/ or dist/src/. */
export function installationFolder(): string {
  let folder = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(folder, 'package.json')) && path.dirname(folder) !== folder) {
    folder = path.dirname(folder);
  }
  return realFolder(folder);
}

/** The installation folder of the Node that runs crewd (`<prefix>/bin/node`). */
export const nodeFolder = () => path.dirname(path.dirname(realFolder(process.execPath)));

/** The real prefix of the Python a virtual environment was made from (its pyvenv.cfg `home`), or null. */
function pythonOfVenv(venv: string): string | null {
  let config: string;
  try {
    config = readFileSync(path.join(venv, 'pyvenv.cfg'), 'utf8');
  } catch {
    return null;
  }
  const home = /^home\s*=\s*(.+)$/m.exec(config)?.[1]?.trim();
  if (!home || !path.isAbsolute(home)) return null;
  const bin = realFolder(home);
  return path.basename(bin) === 'bin' ? path.dirname(bin) : bin;
}

const venvPythons = new Map<string, string[]>();

/**
 * The Pythons the environments in `folder` were made from: a version's environment (`venv/`
 * inside it) or a virtual environment itself. Environments never change once built: asked once each.
 */
export function pythonsOf(folder: string): string[] {
  let found = venvPythons.get(folder);
  if (!found) {
    found = [folder, path.join(folder, 'venv')].map(pythonOfVenv).filter((prefix) => prefix !== null);
    venvPythons.set(folder, found);
  }
  return found;
}

/** The system folders as bwrap arguments: links as links, folders bound read-only; and the folders they show. */
function systemArguments(): { args: string[]; shown: string[] } {
  const args: string[] = [];
  const shown: string[] = [];
  for (const folder of SYSTEM_FOLDERS) {
    const stats = lstatSync(folder, { throwIfNoEntry: false });
    if (!stats) continue;
    if (stats.isSymbolicLink()) {
      args.push('--symlink', readlinkSync(folder), folder);
      shown.push(realFolder(folder));
    } else if (stats.isDirectory()) {
      args.push('--ro-bind', folder, folder);
      shown.push(folder);
    }
  }
  return { args, shown };
}

/** Entries of /etc other users may not read (private keys, password hashes), down to ETC_DEPTH. */
function unreadableInEtc(folder: string, depth: number, found: string[]): void {
  let entries: string[];
  try {
    entries = readdirSync(folder);
  } catch {
    return;
  }
  for (const name of entries) {
    const entry = path.join(folder, name);
    const stats = lstatSync(entry, { throwIfNoEntry: false });
    if (!stats || stats.isSymbolicLink()) continue;
    if ((stats.mode & 0o004) === 0) found.push(entry);
    else if (stats.isDirectory() && depth > 1) unreadableInEtc(entry, depth - 1, found);
  }
}

/** Masks over the secrets of /etc: files by `empty` (an empty read-only file), folders by an empty read-only tmpfs. */
function etcMasks(empty: string): string[] {
  const secrets = ETC_SECRETS.map((name) => path.join('/etc', name)).filter((entry) => existsSync(entry));
  unreadableInEtc('/etc', ETC_DEPTH, secrets);
  const args: string[] = [];
  for (const entry of new Set(secrets)) {
    if (secrets.some((other) => other !== entry && within(entry, other))) continue;
    if (lstatSync(entry).isDirectory()) args.push('--tmpfs', entry, '--remount-ro', entry);
    else args.push('--ro-bind', empty, entry);
  }
  return args;
}

/** Files that links of /etc lead to outside the view (resolv.conf into /run), bound at their real paths. */
function etcLinkTargets(shown: readonly string[]): string[] {
  const args: string[] = [];
  if (existsSync(RESOLVER_FOLDER)) args.push('--ro-bind', RESOLVER_FOLDER, RESOLVER_FOLDER);
  for (const name of readdirSync('/etc')) {
    const entry = path.join('/etc', name);
    if (!lstatSync(entry).isSymbolicLink()) continue;
    const target = realFolder(entry);
    const visible = [...shown, '/proc', '/dev', RESOLVER_FOLDER].some((folder) => within(target, folder));
    if (!visible && existsSync(target) && lstatSync(target).isFile()) args.push('--ro-bind', target, target);
  }
  return args;
}

export interface MachineView {
  /** bwrap's arguments for the view, before the run's own folders. */
  args: string[];
  /** The host folders shown (real paths): what a command may use. */
  shown: string[];
}

/**
 * The machine as every sandbox shows it, decided once at start. `folders` are shown read-only
 * besides the system's (crewd's installation, runtimes, RUNNER_EXTRA_PATHS); `empty` is where the
 * empty file that masks secret files is made.
 */
export function machineView(folders: readonly string[], empty: string): MachineView {
  writeFileSync(empty, '', { mode: 0o444 });
  const system = systemArguments();
  const args = [...system.args];
  const shown = [...system.shown];
  for (const folder of folders.map(realFolder)) {
    if (!existsSync(folder) || shown.some((other) => within(folder, other))) continue;
    args.push('--ro-bind', folder, folder);
    shown.push(folder);
  }
  // After the folders, so that no folder given can show a secret again.
  args.push(...etcMasks(empty), ...etcLinkTargets(shown));
  return { args, shown };
}
