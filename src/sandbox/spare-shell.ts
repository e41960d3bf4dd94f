import type { ProcessPlan } from './types.js';

/**
 * The shell every sandbox starts (a spare one waits in it, execution/sandbox-spares.ts): it reads one line from
 * standard input, the plan of the process it is to become, and runs it, which ends in `exec`. So the
 * process's environment never reaches the programs that make the sandbox on the host (bwrap, the
 * network's set-up), which start with an empty one, nor any argv there. The
 * rest of standard input is left unread for that process (a shell reads a pipe a byte at a time).
 * `nl` lets the plan put a newline into a value without breaking its one line.
 */
export const SPARE_SHELL = ['/bin/sh', '-c', 'IFS= read -r plan || exit 125\nnl=\'\n\'\neval "$plan"'];

/** One shell word, whatever the text: in single quotes, with `'` and newlines spelled out. */
export function shellWord(text: string): string {
  return `'${text.replaceAll("'", `'\\''`).replaceAll('\n', `'"$nl"'`)}'`;
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Throws, naming it, for a variable the sandbox's shell could not export (the API checks versions' names already). */
export function assertExportable(env: Record<string, string>): void {
  const name = Object.keys(env).find((key) => !VARIABLE_NAME.test(key));
  if (name !== undefined) {
    throw new Error(
      `the environment variable ${JSON.stringify(name)} cannot be given to a sandboxed process: names must match ` +
        `${VARIABLE_NAME.source}; rename it or remove it from crewd's environment`,
    );
  }
}

/**
 * The plan as the sandbox's line: into its folder, with exactly its environment and PWD, the folder
 * (as bwrap's `--chdir` sets it; the shell's OLDPWD is unset), then `exec`, so the process is the
 * sandbox's own, with the shell gone.
 */
export function spareLine(plan: ProcessPlan): string {
  const exports = Object.entries(plan.env).map(([name, value]) => `export ${name}=${shellWord(value)}`);
  return [
    `cd ${shellWord(plan.cwd)}`,
    'unset OLDPWD',
    ...exports,
    `exec ${plan.command.map(shellWord).join(' ')}`,
  ].join(' && ');
}
