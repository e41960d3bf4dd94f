// The smallest crew: three events, then a result built from the input.
let text = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  text += chunk;
});
process.stdin.on('end', () => {
  const { input } = JSON.parse(text);
  const out = (type, data) => process.stdout.write(`${JSON.stringify({ type, data })}\n`);
  out('task.started', { task: 'echo', agent: 'echoer' });
  out('log', { message: 'echoing the input' });
  out('task.completed', { task: 'echo', agent: 'echoer' });
  out('run.completed', { output: { echo: input } });
});
