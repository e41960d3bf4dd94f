// Reports what the runner was given: its stdin message, environment and working folder.
let text = '';
process.stdin.on('data', (chunk) => {
  text += chunk;
});
process.stdin.on('end', () => {
  const received = JSON.parse(text);
  const report = { stdin: received, env: { ...process.env }, cwd: process.cwd(), argv: process.argv.slice(2) };
  process.stdout.write(`${JSON.stringify({ type: 'inspect', data: report })}\n`);
  process.stdout.write(`${JSON.stringify({ type: 'run.completed', data: { output: report } })}\n`);
});
