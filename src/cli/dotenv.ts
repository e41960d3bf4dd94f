import { readFileSync } from 'node:fs';
import { CliError } from './api.js';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A value of a `.env` line: quotes removed (escapes of double quotes read), an unquoted value's ` # comment` cut. */
function unquote(raw: string): string {
  const value = raw.trim();
  if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) {
    return value
      .slice(1, -1)
      .replace(/\\n/g, '\n')
      .replace(/\\(["\\])/g, '$1');
  }
  if (value.startsWith("'") && value.endsWith("'") && value.length >= 2) return value.slice(1, -1);
  return value.replace(/\s+#.*$/, '');
}

/** The variables of a `.env` file: `NAME=value` lines, `export ` allowed, `#` comments and blank lines skipped. */
export function readDotEnv(file: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`--from ${file}: cannot read the file (${(error as Error).message})`);
  }
  const variables: Record<string, string> = {};
  text.split(/\r?\n/).forEach((line, index) => {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const assignment = trimmed.replace(/^export\s+/, '');
    const equals = assignment.indexOf('=');
    const name = equals > 0 ? assignment.slice(0, equals).trim() : '';
    if (!NAME.test(name)) throw new CliError(`${file} line ${index + 1}: expected NAME=value`);
    variables[name] = unquote(assignment.slice(equals + 1));
  });
  return variables;
}

/** `NAME=value` arguments as variables. */
export function parseAssignments(args: readonly string[]): Record<string, string> {
  const variables: Record<string, string> = {};
  for (const arg of args) {
    const equals = arg.indexOf('=');
    const name = equals > 0 ? arg.slice(0, equals) : '';
    if (!NAME.test(name)) throw new CliError(`${arg}: give variables as NAME=value (NAME of letters, digits and _)`);
    variables[name] = arg.slice(equals + 1);
  }
  return variables;
}
