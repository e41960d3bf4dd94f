import { spawn } from 'node:child_process';
import type { ExitStatus, LaunchedProcess, LaunchRequest, ProcessLauncher } from './launcher.js';
import { terminateGroup } from './process-group.js';

/**
 * The launcher without a helper: `spawn(…, { detached: true })` from the service itself. Kept to
 * measure the spawner helper against (RUNNER_SPAWNER=direct, `npm run bench -- runs`). Unlike the
 * helper it cannot end runners when the service is killed with SIGKILL: they outlive it.
 */
export function createDirectSpawner(): ProcessLauncher {
  const live = new Set<number>();
  return {
    start(): void {},

    launch(request: LaunchRequest): Promise<LaunchedProcess | { error: string }> {
      const [file, ...args] = request.command;
      if (file === undefined) return Promise.resolve({ error: 'the command is empty' });
      return new Promise((resolveStart) => {
        const child = spawn(file, args, {
          cwd: request.cwd,
          env: request.env,
          detached: true,
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        const exit = new Promise<ExitStatus | null>((resolve) => {
          child.once('exit', (code, signal) => {
            if (child.pid !== undefined) live.delete(child.pid);
            resolve({ code, signal });
          });
        });
        child.once('error', (error) => resolveStart({ error: error.message }));
        child.once('spawn', () => {
          const pid = child.pid as number;
          live.add(pid);
          child.stdin.on('error', () => {});
          const sendStdin = (text: string, keepOpen?: boolean) =>
            keepOpen ? child.stdin.write(text) : child.stdin.end(text);
          if (request.stdin !== null) sendStdin(request.stdin, request.keepStdinOpen);
          const answer = (line: string) => {
            if (child.stdin.writable) child.stdin.write(`${line}\n`);
          };
          const endGroup = (graceMs: number) => terminateGroup(pid, graceMs);
          resolveStart({ pid, stdout: child.stdout, stderr: child.stderr, sendStdin, answer, exit, endGroup });
        });
      });
    },

    async stop(): Promise<void> {
      for (const pid of live) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {}
      }
      live.clear();
    },
  };
}
