// For tests of events a run wrote as something else ends it: `input.bursts` bursts of `input.size` `tick`
// events each, burst n once the file `go-<n>` exists in `input.dir`; then, with `input.hold`, it waits to be
// stopped, else it writes its result. With `input.linger` it outlives SIGTERM (only SIGKILL ends it), writing its
// pid to the file `terminated` in `input.dir` when the signal comes.
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';

let text = '';
process.stdin.on('data', (chunk) => {
  text += chunk;
});
process.stdin.on('end', () => {
  const { input } = JSON.parse(text);
  if (input.linger) process.on('SIGTERM', () => writeFileSync(path.join(input.dir, 'terminated'), String(process.pid)));
  const out = (type, data) => process.stdout.write(`${JSON.stringify({ type, data })}\n`);
  let burst = 0;
  const next = () => {
    if (burst >= (input.bursts ?? 0)) {
      if (input.hold) setInterval(() => {}, 60_000);
      else out('run.completed', { output: { bursts: burst } });
      return;
    }
    const go = path.join(input.dir, `go-${burst + 1}`);
    const waiting = setInterval(() => {
      if (!existsSync(go)) return;
      clearInterval(waiting);
      burst++;
      for (let i = 1; i <= (input.size ?? 1); i++) out('tick', { burst, i });
      next();
    }, 5);
  };
  next();
});
