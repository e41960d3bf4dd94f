import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { terminateGroup } from '../execution/process-group.js';

/** One process of a build: what a sandbox would wrap (CONTRACTS §12). */
export interface StepPlan {
  command: string[];
  cwd: string;
  env: Record<string, string>;
}

/** Where a build writes its output, line by line. */
export type BuildLogger = (message: string, stream: 'stdout' | 'stderr') => void;

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

/**
 * Runs one build step in its own process group, its output lines going to the build log; throws
 * BuildFailure when it exits non-zero or runs past `deadline` (a Date.now() value). Every build
 * process is started here, so that the sandbox can be put around them in one place.
 */
export async function runStep(
  step: string,
  plan: StepPlan,
  log: BuildLogger,
  deadline: number,
  signal?: AbortSignal,
): Promise<void> {
  if (signal?.aborted) throw new BuildFailure(step, `${step} was stopped: the service is shutting down`);
  const [program, ...args] = plan.command;
  if (!program) throw new BuildFailure(step, `${step}: nothing to run`);
  log(`$ ${plan.command.join(' ')}`, 'stdout');
  const child = spawn(program, args, {
    cwd: plan.cwd,
    env: plan.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  const take = (stream: 'stdout' | 'stderr') => (line: string) => {
    log(line, stream);
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
  };
  createInterface({ input: child.stdout }).on('line', take('stdout'));
  createInterface({ input: child.stderr }).on('line', take('stderr'));
  let timedOut = false;
  const timer = setTimeout(
    () => {
      timedOut = true;
      if (child.pid) void terminateGroup(child.pid, KILL_GRACE_MS);
    },
    Math.max(0, deadline - Date.now()),
  );
  const stop = () => {
    if (child.pid) void terminateGroup(child.pid, KILL_GRACE_MS);
  };
  signal?.addEventListener('abort', stop);
  const outcome = await new Promise<{ code: number | null; error?: Error }>((resolve) => {
    child.once('error', (error) => resolve({ code: null, error }));
    child.once('close', (code) => resolve({ code }));
  });
  clearTimeout(timer);
  signal?.removeEventListener('abort', stop);
  if (child.pid) void terminateGroup(child.pid, 0);
  if (outcome.code === 0 && !timedOut && !signal?.aborted) return;
  const why = signal?.aborted
    ? 'was stopped: the service is shutting down'
    : timedOut
      ? 'timed out'
      : outcome.error
        ? `could not start (${outcome.error.message})`
        : `exited with code ${outcome.code}`;
  const lines = tail.length > 0 ? `\n${tail.join('\n')}` : '';
  throw new BuildFailure(step, `${step} ${why}${lines}`);
}
