import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { pythonOnPath } from '../python-on-path.js';

const execute = promisify(execFile);

/** `compute` once per key in this process; later calls with the same key share its answer. */
function oncePerKey<A extends unknown[]>(
  keyOf: (...args: A) => string,
  compute: (...args: A) => Promise<string>,
): (...args: A) => Promise<string> {
  const answers = new Map<string, Promise<string>>();
  return (...args) => {
    const key = keyOf(...args);
    let answer = answers.get(key);
    if (!answer) {
      answer = compute(...args);
      answers.set(key, answer);
    }
    return answer;
  };
}

/** The version line of a tool, asked once per process: part of a build's cache key. */
export const versionOf = oncePerKey(
  (command: string[], _env: Record<string, string>) => command.join(' '),
  (command, env) => {
    const [program = '', ...args] = command;
    return execute(program, args, { env }).then(
      ({ stdout, stderr }) => `${stdout}${stderr}`.trim(),
      () => 'unavailable',
    );
  },
);

/**
 * The interpreter behind `python3` on PATH. A version manager's shim (pyenv) runs hooks after
 * `pip install` that write to its own folder, which a build step in the sandbox may not: the build
 * calls the interpreter itself.
 */
export const python3Of = async (env: Record<string, string>): Promise<string> =>
  (await pythonOnPath(env))?.executable ?? 'python3';

/**
 * PATH of build steps: the service's own (or the runners' default) first, so that `python3` (and `uv`) are
 * the ones PATH names, as the docs say; then the folder of the node that runs crewd, for projects' npm.
 */
export function buildPath(runnerPath: string): string {
  const nodeDir = path.dirname(process.execPath);
  return runnerPath.split(':').includes(nodeDir) ? runnerPath : `${runnerPath}:${nodeDir}`;
}
