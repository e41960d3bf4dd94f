import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execute = promisify(execFile);

/** The `python3` a PATH names, as the interpreter itself reports it. */
export interface PythonOnPath {
  /** The interpreter behind `python3`: a version manager's shim (pyenv) resolved to the program it runs. */
  executable: string;
  /** Its installation folder (`sys.base_prefix`, links resolved): what builds make environments from. */
  installation: string;
}

const CODE = 'import os, sys; print(sys.executable); print(os.path.realpath(sys.base_prefix))';
const answers = new Map<string, Promise<PythonOnPath | null>>();

/**
 * The `python3` on `env.PATH`, asked once per PATH in this process (the sandbox asks which
 * runtime to show runners, builds which interpreter to call); null when there is none. The rest
 * of `env` is what a version manager's shim reads.
 */
export function pythonOnPath(env: Record<string, string>): Promise<PythonOnPath | null> {
  const key = env.PATH ?? '';
  let answer = answers.get(key);
  if (!answer) {
    answer = execute('python3', ['-c', CODE], { env, timeout: 10_000 }).then(
      ({ stdout }) => {
        const [executable, installation] = stdout.trim().split('\n');
        return executable && installation ? { executable, installation } : null;
      },
      () => null,
    );
    answers.set(key, answer);
  }
  return answer;
}
