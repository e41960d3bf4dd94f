// A thread-aware crew: counts turns in the thread's values and keeps the messages.
// input.mode "merge" returns only output (merged into the values); "fail" fails the run.
let text = '';
process.stdin.on('data', (chunk) => {
  text += chunk;
});
process.stdin.on('end', () => {
  const { input, thread } = JSON.parse(text);
  const values = thread?.values ?? {};
  const out = (type, data) => process.stdout.write(`${JSON.stringify({ type, data })}\n`);
  out('log', { message: `turn with ${JSON.stringify(values)}` });
  if (input.mode === 'fail') {
    out('run.failed', { error: 'turn failed' });
    return;
  }
  if (input.mode === 'merge') {
    out('run.completed', { output: { last: input.message ?? null } });
    return;
  }
  const turns = (values.turns ?? 0) + 1;
  const messages = [...(values.messages ?? []), input.message ?? null];
  out('run.completed', { output: { reply: `turn ${turns}` }, values: { turns, messages } });
});
