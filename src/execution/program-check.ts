import { statSync } from 'node:fs';
import path from 'node:path';
import { findOnPath, isExecutableFile } from '../program-search.js';

/** Programs whose first argument not starting with `-` is a script they run. */
const INTERPRETERS = new Set(['node', 'python', 'python3', 'bun', 'deno', 'ruby', 'perl', 'bash', 'sh']);

function exists(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a version's command cannot start in `cwd`, before it is spawned: a program that is not
 * there, or an interpreter's script that is not (relative paths resolve in the run's folder).
 * Null when both are found. Spares the user a bare ENOENT or an interpreter's version line.
 */
export function missingProgram(command: readonly string[], cwd: string, searchPath: string): string | null {
  const [program, ...args] = command;
  if (program === undefined || program === '') return 'the command is empty';
  let found: string | null;
  if (program.includes('/')) {
    found = path.resolve(cwd, program);
    if (!isExecutableFile(found)) return `program ${found} not found or not executable`;
  } else {
    found = findOnPath(program, searchPath);
    if (!found) return `program "${program}" not found on PATH ${searchPath}`;
  }
  if (!INTERPRETERS.has(path.basename(found).replace(/\d+(\.\d+)*$/, ''))) return null;
  const script = args.find((arg) => !arg.startsWith('-'));
  // `python -m module`, `node -e code`: the flag takes the next argument, which is no script.
  if (script === undefined || args.indexOf(script) > 0) return null;
  const scriptPath = path.resolve(cwd, script);
  return exists(scriptPath) ? null : `script ${scriptPath} not found`;
}
