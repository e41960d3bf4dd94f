// Proves that a thread never has two runs at once: each run holds a lock file named after its thread
// (in input.lock_dir) from its start until its process is gone, and fails at once if it finds the lock
// taken. It appends its run id to <thread>.order as it starts, works input.ms (default 100; with input.until_file,
// until that file exists) and adds
// input.n to the thread's values.seen. Stopped with SIGTERM, it lingers input.linger_ms (default 200;
// keep it under the kill grace, as SIGKILL would leave the lock behind) before it lets go of the lock and
// exits, as a runner cleaning up would.
import { appendFileSync, closeSync, existsSync, openSync, rmSync } from 'node:fs';
import path from 'node:path';

let text = '';
process.stdin.on('data', (chunk) => {
  text += chunk;
});
process.stdin.on('end', () => {
  const { run_id, input, thread } = JSON.parse(text);
  const out = (type, data) => process.stdout.write(`${JSON.stringify({ type, data })}\n`);
  const lock = path.join(input.lock_dir, `${thread.thread_id}.lock`);
  try {
    closeSync(openSync(lock, 'wx'));
  } catch {
    out('run.failed', { error: 'another run of this thread is running' });
    process.exit(1);
  }
  const release = () => rmSync(lock, { force: true });
  appendFileSync(path.join(input.lock_dir, `${thread.thread_id}.order`), `${run_id}\n`);
  process.on('SIGTERM', () => {
    setTimeout(() => {
      release();
      process.exit(143);
    }, input.linger_ms ?? 200);
  });
  const finish = () => {
    release();
    if (input.fail) {
      out('run.failed', { error: 'asked to fail' });
      return;
    }
    const values = thread.values ?? {};
    out('run.completed', {
      output: { n: input.n ?? null },
      values: { ...values, seen: [...(values.seen ?? []), input.n ?? null] },
    });
  };
  if (!input.until_file) return setTimeout(finish, input.ms ?? 100);
  const waiting = setInterval(() => {
    if (!existsSync(input.until_file)) return;
    clearInterval(waiting);
    finish();
  }, 10);
});
