// Mixes protocol events, plain text, malformed JSON and standard error, then succeeds.
process.stdin.resume();
process.stdin.on('end', () => {
  const out = (line) => process.stdout.write(`${line}\n`);
  out('plain text line');
  out('{"type": "log", "data": "not an object"}');
  out('{not json');
  out(JSON.stringify({ type: 'custom.thing', data: { answer: 42 } }));
  process.stderr.write('a warning on stderr\n');
  out('');
  out(JSON.stringify({ type: 'run.completed', data: { output: { ok: true } } }));
});
