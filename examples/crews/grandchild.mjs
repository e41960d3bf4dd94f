// Starts a grandchild that sleeps for a minute (in the same process group), reports both pids, then waits.
import { spawn } from 'node:child_process';

process.stdin.resume();
process.stdin.on('end', () => {
  const child = spawn(process.execPath, ['-e', 'process.on("SIGTERM", () => {}); setTimeout(() => {}, 60000)'], {
    stdio: 'ignore',
  });
  process.stdout.write(
    `${JSON.stringify({ type: 'log', data: { message: 'spawned', pid: process.pid, grandchild_pid: child.pid } })}\n`,
  );
  setInterval(() => {}, 1000);
});
