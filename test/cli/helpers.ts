import { spawn } from 'node:child_process';
import path from 'node:path';

const CLI = path.resolve(import.meta.dirname, '../../src/cli/crewd.mjs');

/** Each command is a fresh node process (about 2 s on a loaded two-core machine), and a test runs a dozen. */
export const CLI_TEST_TIMEOUT = 120_000;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `crewd ARGS` as a user would (the package.json bin), with HOME and its config folder in `home`. */
export function runCrewd(home: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Standard output as the JSON lines it is made of. */
export const jsonLines = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
