import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { CliError } from './api.js';

export interface Credentials {
  url: string;
  key: string;
}

/** Where `crewd login` keeps the URL and key: readable by its owner only. */
export function credentialsFile(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || homedir(), '.config');
  return path.join(base, 'crewd', 'credentials.json');
}

export function saveCredentials(env: NodeJS.ProcessEnv, credentials: Credentials): string {
  const file = credentialsFile(env);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return file;
}

/** Removes what `crewd login` saved; answers whether there was anything to remove. */
export function removeCredentials(env: NodeJS.ProcessEnv): { file: string; removed: boolean } {
  const file = credentialsFile(env);
  try {
    readFileSync(file);
  } catch {
    return { file, removed: false };
  }
  rmSync(file, { force: true });
  return { file, removed: true };
}

/** CREWD_URL and CREWD_API_KEY first, then what `crewd login` saved. */
export function loadCredentials(env: NodeJS.ProcessEnv): Credentials {
  let saved: Partial<Credentials> = {};
  try {
    saved = JSON.parse(readFileSync(credentialsFile(env), 'utf8')) as Partial<Credentials>;
  } catch {
    // Not logged in: the variables alone may do.
  }
  const url = env.CREWD_URL || saved.url;
  const key = env.CREWD_API_KEY || saved.key;
  if (!url || !key) {
    throw new CliError('Not logged in: run `crewd login --url <url> --key <key>`, or set CREWD_URL and CREWD_API_KEY');
  }
  return { url, key };
}
