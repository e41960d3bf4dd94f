import type { Logger } from 'pino';
import { SANDBOX_HOME_ENV } from '../sandbox/home.js';
import type { Sandbox, SpareShape, WrappedPlan } from '../sandbox/index.js';
import { makeHome, removeLeftoverHomes } from './home-folders.js';
import type { LaunchedProcess, LaunchRequest, ProcessLauncher } from './launcher.js';
import { createSparePool } from './sandbox-spares.js';

export interface SpareOptions {
  /** DATA_DIR/runs: where spare sandboxes keep their folders, and plain processes their homes. */
  runsDir: string;
  logger: Logger;
}

/**
 * Without the sandbox, each process gets a home and a TMPDIR of its own in DATA_DIR/runs, removed
 * once it exited (CONTRACTS §12 "Home"), with the files the request puts into its home.
 */
function plainLauncher(inner: ProcessLauncher, runsDir: string): ProcessLauncher {
  return {
    start() {
      inner.start();
      removeLeftoverHomes(runsDir);
    },
    stop: () => inner.stop(),
    async launch(request) {
      let home: Awaited<ReturnType<typeof makeHome>>;
      try {
        home = await makeHome(runsDir, request.confinement.homeFiles ?? []);
      } catch (error) {
        return { error: `could not make the process's home: ${(error as Error).message}` };
      }
      const launched = await inner.launch({ ...request, env: { ...request.env, ...home.env } });
      if ('error' in launched) await home.remove();
      else void launched.exit.then(() => home.remove());
      return launched;
    },
  };
}

/** The sandbox's line (its process's environment, folder and command) first, then the request's input. */
const withLine = (line: string | null, stdin: string | null): string | null =>
  line === null || stdin === null ? stdin : `${line}\n${stdin}`;

/** A process launched with its input to come: the sandbox's line goes first. */
function firstLine(launched: LaunchedProcess, line: string): LaunchedProcess {
  return { ...launched, sendStdin: (text, keepOpen) => launched.sendStdin(`${line}\n${text}`, keepOpen) };
}

/**
 * A launcher whose processes start in the sandbox (CONTRACTS §12): each request's plan is wrapped
 * first, with the sandbox's home over the request's. With `spares`, a run takes a sandbox of its
 * shape made ahead when one waits. Without the sandbox, each process gets a home folder of its own.
 */
export function sandboxedLauncher(inner: ProcessLauncher, sandbox: Sandbox, spares?: SpareOptions): ProcessLauncher {
  if (sandbox.kind === 'none') return spares ? plainLauncher(inner, spares.runsDir) : inner;
  const pool = spares && sandbox.spareShape ? createSparePool(inner, spares) : null;

  // bwrap's own PID namespace: when its init ends, the kernel ends everything else in it; what is
  // left of its group then is at most a zombie, which the machine's init reaps in its own time. So
  // once bwrap exited there is nothing to end (and no group to watch until that zombie goes).
  const inSandbox = (launched: LaunchedProcess): LaunchedProcess => {
    let gone = false;
    const exited = launched.exit.then(() => {
      gone = true;
    });
    const endGroup = (graceMs: number) => (gone ? exited : Promise.race([launched.endGroup(graceMs), exited]));
    return { ...launched, endGroup, limited: true };
  };

  /** Once the process ends, a spare of its shape is made for the next one. */
  const afterwards = (launched: LaunchedProcess, shape: SpareShape): LaunchedProcess => {
    void launched.exit.then(() => pool?.madeRoomFor(shape));
    return inSandbox(launched);
  };

  async function launch(request: LaunchRequest) {
    // The sandbox's home and /tmp, over whatever the version's env says of them.
    const plain = { command: request.command, cwd: request.cwd, env: { ...request.env, ...SANDBOX_HOME_ENV } };
    let plan: WrappedPlan;
    let shape: SpareShape | null = null;
    try {
      if (pool && request.stdin !== null) {
        shape = sandbox.spareShape?.(plain, request.confinement) ?? null;
        const spare = shape ? pool.take(shape, request.stdin, request.keepStdinOpen) : null;
        if (spare && shape) return afterwards(spare, shape);
      }
      plan = shape ? shape.fresh() : sandbox.wrap(plain, request.confinement);
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) };
    }
    const { line, ...spawned } = plan;
    const launched = await inner.launch({ ...request, ...spawned, stdin: withLine(line, request.stdin) });
    if ('error' in launched) return launched;
    const started = line !== null && request.stdin === null ? firstLine(launched, line) : launched;
    return shape ? afterwards(started, shape) : inSandbox(started);
  }

  return {
    start() {
      inner.start();
      pool?.removeLeftovers();
    },
    async stop() {
      await pool?.stop();
      await inner.stop();
    },
    launch,
  };
}
