// For the benchmarks: `count` events, one every `interval_ms`, each stamped with the wall-clock
// time of writing (ms, sub-ms precision), scheduled against the start so delays do not add up.
// The result reports `elapsed_ms`, from the first event to the last.
let text = '';
process.stdin.on('data', (chunk) => {
  text += chunk;
});
process.stdin.on('end', () => {
  const { input } = JSON.parse(text);
  const count = input.count ?? 1000;
  const interval = input.interval_ms ?? 10;
  const now = () => performance.timeOrigin + performance.now();
  let start = 0;
  let i = 0;
  const step = () => {
    i++;
    process.stdout.write(`${JSON.stringify({ type: 'tick', data: { i, t: now() } })}\n`);
    if (i >= count) {
      const elapsed = now() - start;
      process.stdout.write(
        `${JSON.stringify({ type: 'run.completed', data: { output: { count, elapsed_ms: elapsed } } })}\n`,
      );
      return;
    }
    setTimeout(step, Math.max(0, start + i * interval - now()));
  };
  // `start_delay_ms` leaves time for clients to connect before the first event.
  setTimeout(() => {
    start = now();
    step();
  }, input.start_delay_ms ?? 0);
});
