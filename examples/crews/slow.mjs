// Logs a tick every `interval_ms` (default 50) for `ticks` ticks (default: forever), then succeeds.
// With `ignore_sigterm` it survives SIGTERM, so only SIGKILL ends it.
let text = '';
process.stdin.on('data', (chunk) => {
  text += chunk;
});
process.stdin.on('end', () => {
  const { input } = JSON.parse(text);
  if (input.ignore_sigterm) process.on('SIGTERM', () => {});
  const interval = input.interval_ms ?? 50;
  const ticks = input.ticks ?? Number.POSITIVE_INFINITY;
  process.stdout.write(`${JSON.stringify({ type: 'log', data: { message: 'started', pid: process.pid } })}\n`);
  let n = 0;
  const timer = setInterval(() => {
    n++;
    process.stdout.write(`${JSON.stringify({ type: 'log', data: { message: `tick ${n}` } })}\n`);
    if (n >= ticks) {
      clearInterval(timer);
      process.stdout.write(`${JSON.stringify({ type: 'run.completed', data: { output: { ticks: n } } })}\n`);
    }
  }, interval);
});
