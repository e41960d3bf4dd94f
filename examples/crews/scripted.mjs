// Writes the events of `input.events` ({type, data} each) in order, then its result; with
// `input.hold` it writes no result and waits to be stopped. For tests of usage and traces: a
// runner of any language reports LLM calls as `llm.call` events (CONTRACTS §15).
let text = '';
process.stdin.on('data', (chunk) => {
  text += chunk;
});
process.stdin.on('end', async () => {
  const { input } = JSON.parse(text);
  for (const event of input.events ?? []) {
    process.stdout.write(`${JSON.stringify(event)}\n`);
    // A moment between events, so spans built from them have lengths.
    await new Promise((resolve) => setTimeout(resolve, input.pause_ms ?? 0));
  }
  if (input.hold) {
    setInterval(() => {}, 60_000);
    return;
  }
  process.stdout.write(`${JSON.stringify({ type: 'run.completed', data: { output: { done: true } } })}\n`);
});
