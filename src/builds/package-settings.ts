import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { HomeFile } from '../sandbox/types.js';

/** Where pip, uv and npm read their settings beside the service user's home: the system's (in /etc, shown anyway). */
const SYSTEM_SETTINGS = ['/etc/pip.conf', '/etc/xdg/pip/pip.conf', '/etc/uv/uv.toml', '/etc/npmrc'];
/** Variables that name a settings file of their own. */
const SETTINGS_VARIABLES = ['PIP_CONFIG_FILE', 'UV_CONFIG_FILE', 'NPM_CONFIG_USERCONFIG', 'npm_config_userconfig'];
/** Variables whose values may name local folders: pip's and uv's find-links, indexes and constraints. */
const NAMING_VARIABLES = /^(PIP_|UV_)/;
/** An absolute path or a file:// URL in a settings value. */
const LOCAL_PATH = /(?:^|[\s=,"'])(?:file:\/\/)?(\/[^\s"',]+)/g;

export interface PackageSettings {
  /** The service user's own settings files, put at the same places in the step's home. */
  homeFiles: HomeFile[];
  /** Settings files named by variables, and the local folders and files the settings name, read-only. */
  readOnly: string[];
}

const isFile = (file: string) => statSync(file, { throwIfNoEntry: false })?.isFile() === true;

/** The local paths a settings text names (find-links folders, file:// indexes, constraint files) that exist. */
function namedPaths(text: string): string[] {
  return [...text.matchAll(LOCAL_PATH)]
    .map((match) => path.normalize(decodeURI(match[1] as string)))
    .filter((file) => file !== '/' && existsSync(file));
}

function read(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * What a build step gets of the service user's package-index settings (CONTRACTS §12 "Package
 * settings in builds"): pip's, uv's and npm's files from its home, into the step's own home; the
 * files its variables name; and the local folders all of them name, read-only. Nothing else of that home.
 */
export function packageSettings(env: Record<string, string>): PackageSettings {
  const homeFiles: HomeFile[] = [];
  const home = env.HOME;
  if (home && path.isAbsolute(home)) {
    const config =
      env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : `${home}/.config`;
    const own: Array<[string, string]> = [
      [path.join(config, 'pip/pip.conf'), '.config/pip/pip.conf'],
      [path.join(home, '.pip/pip.conf'), '.pip/pip.conf'],
      [path.join(config, 'uv/uv.toml'), '.config/uv/uv.toml'],
      [path.join(home, '.npmrc'), '.npmrc'],
    ];
    for (const [source, target] of own) if (isFile(source)) homeFiles.push({ source, target });
  }
  const named = SETTINGS_VARIABLES.map((name) => env[name]).filter(
    (file): file is string => file !== undefined && path.isAbsolute(file) && isFile(file),
  );
  const texts = [
    ...[...homeFiles.map((file) => file.source), ...named, ...SYSTEM_SETTINGS].map(read),
    ...Object.entries(env)
      .filter(([name]) => NAMING_VARIABLES.test(name) && !name.endsWith('_CACHE_DIR'))
      .map(([, value]) => ` ${value}`),
  ];
  return { homeFiles, readOnly: [...new Set([...named, ...texts.flatMap(namedPaths)])] };
}
