import type { Sandbox } from '../sandbox/index.js';
import type { ProcessLauncher } from './launcher.js';

/** A launcher whose processes start in the sandbox (CONTRACTS §12): each request's plan is wrapped first. */
export function sandboxedLauncher(inner: ProcessLauncher, sandbox: Sandbox): ProcessLauncher {
  if (sandbox.kind === 'none') return inner;
  return {
    start: () => inner.start(),
    stop: () => inner.stop(),
    async launch(request) {
      let plan: ReturnType<Sandbox['wrap']>;
      try {
        plan = sandbox.wrap({ command: request.command, cwd: request.cwd, env: request.env }, request.confinement);
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) };
      }
      const launched = await inner.launch({ ...request, ...plan });
      if ('error' in launched) return launched;
      // bwrap's own PID namespace: when its init ends, the kernel ends everything else in it; what is
      // left of its group then is at most a zombie, which the machine's init reaps in its own time.
      const exited = launched.exit.then(() => {});
      return { ...launched, endGroup: (graceMs) => Promise.race([launched.endGroup(graceMs), exited]) };
    },
  };
}
