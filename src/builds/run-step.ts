import { setTimeout as sleep } from 'node:timers/promises';
import type { ProcessLauncher } from '../execution/launcher.js';
import { RUN_LIMITS } from '../run-limits.js';
import { packageSettings } from './package-settings.js';
import { readCappedLines } from './step-output.js';

/** Where a build writes its output, line by line. */
export type BuildLogger = (message: string, stream: 'stdout' | 'stderr') => void;

/** What every step of one build runs with. */
export interface StepTools {
  /** The runners' launcher: steps start in the same sandbox as runs (CONTRACTS §12). */
  launcher: ProcessLauncher;
  /** The environment of build steps (PATH, package-tool settings and caches). */
  env: Record<string, string>;
  /** Folders a step may write: the version's build folder and its organization's build cache. */
  writable: string[];
  /** Folders of crewd's a step may read besides (in the sandbox, DATA_DIR and BUILD_CACHE_DIR are hidden). */
  readOnly?: string[];
  log: BuildLogger;
  deadline: number;
  /** Aborted when the service stops: the step's processes are ended. */
  signal?: AbortSignal | undefined;
}

/** The build failed: `step` names what failed, `message` says how, with its last output lines. */
export class BuildFailure extends Error {
  constructor(
    readonly step: string,
    message: string,
  ) {
    super(message);
    this.name = 'BuildFailure';
  }
}

const TAIL_LINES = 20;
const KILL_GRACE_MS = 2000;
/** How long output may still arrive after the step's process ended (a descendant holding the pipe). */
const DRAIN_MS = 1000;

function failureReason(stopped: boolean, timedOut: boolean, exit: { code: number | null } | null): string {
  if (stopped) return 'was stopped: the service is shutting down';
  if (timedOut) return 'timed out';
  if (exit === null) return 'was lost: the process launcher stopped';
  return `exited with code ${exit.code}`;
}

/**
 * Runs one build step through the launcher, in the sandbox, in the network RUNNER_NETWORK gives
 * runners (CONTRACTS §12: `isolated` reaches package indexes, not the host), its output lines going to the build log; throws
 * BuildFailure when it exits non-zero or runs past `tools.deadline` (a Date.now() value). Its whole
 * process group ends with it, on a timeout and when the service stops.
 */
export async function runStep(step: string, command: string[], cwd: string, tools: StepTools): Promise<void> {
  const { signal } = tools;
  if (signal?.aborted) throw new BuildFailure(step, `${step} was stopped: the service is shutting down`);
  if (command.length === 0) throw new BuildFailure(step, `${step}: nothing to run`);
  tools.log(`$ ${command.join(' ')}`, 'stdout');
  // The service user's pip, uv and npm settings, in the step's own home (the launcher gives it one).
  const settings = packageSettings(tools.env);
  const launched = await tools.launcher.launch({
    command,
    cwd,
    env: tools.env,
    stdin: '',
    confinement: {
      writable: tools.writable,
      readOnly: [...(tools.readOnly ?? []), ...settings.readOnly],
      homeFiles: settings.homeFiles,
    },
  });
  if ('error' in launched) throw new BuildFailure(step, `${step} could not start (${launched.error})`);
  const tail: string[] = [];
  const take = (stream: 'stdout' | 'stderr') => (line: string) => {
    tools.log(line, stream);
    // build_error keeps the start of each last line, as a long line's log event does.
    tail.push(line.length > RUN_LIMITS.truncatedHeadBytes ? `${line.slice(0, RUN_LIMITS.truncatedHeadBytes)}…` : line);
    if (tail.length > TAIL_LINES) tail.shift();
  };
  const output = Promise.all([
    readCappedLines(launched.stdout, take('stdout')),
    readCappedLines(launched.stderr, take('stderr')),
  ]);
  let timedOut = false;
  const stop = () => void launched.endGroup(KILL_GRACE_MS);
  const timer = setTimeout(
    () => {
      timedOut = true;
      stop();
    },
    Math.max(0, tools.deadline - Date.now()),
  );
  signal?.addEventListener('abort', stop);
  const exit = await launched.exit;
  clearTimeout(timer);
  signal?.removeEventListener('abort', stop);
  // Whatever the step left in its group goes too (in the sandbox, the kernel ended it all already).
  await launched.endGroup(0);
  await Promise.race([output, sleep(DRAIN_MS)]);
  if (exit?.code === 0 && !timedOut && !signal?.aborted) return;
  const lines = tail.length > 0 ? `\n${tail.join('\n')}` : '';
  throw new BuildFailure(step, `${step} ${failureReason(signal?.aborted === true, timedOut, exit)}${lines}`);
}
