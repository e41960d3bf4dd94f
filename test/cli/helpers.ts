import { spawn } from 'node:child_process';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Parser } from 'tar';
import type { RunContext } from '../runs/helpers.js';

const CLI = path.resolve(import.meta.dirname, '../../bin/crewd.mjs');

/** Each command is a fresh node process (about 2 s on a loaded two-core machine), and a test runs a dozen. */
export const CLI_TEST_TIMEOUT = 120_000;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `crewd ARGS` as a user would (the package.json bin), with `home` as its HOME (its login is saved there). */
export function runCrewd(home: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: home, ...env },
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

/** The paths in a version's stored bundle, sorted (folders with a trailing `/`). */
export async function bundleEntries(ctx: RunContext, deploymentId: string, versionId: string): Promise<string[]> {
  const response = await ctx.call('GET', `/v1/deployments/${deploymentId}/versions/${versionId}/bundle`);
  const entries: string[] = [];
  await pipeline(
    Readable.from([response.rawPayload]),
    new Parser({
      onReadEntry: (entry) => {
        entries.push(entry.path.replace(/^\.\//, ''));
        entry.resume();
      },
    }),
  );
  return entries.filter(Boolean).sort();
}
