// Writes to standard error and exits 3 without a result: a crash.
process.stdin.resume();
process.stdin.on('end', () => {
  process.stdout.write(`${JSON.stringify({ type: 'log', data: { message: 'working' } })}\n`);
  process.stderr.write('Traceback: something broke\n');
  process.stderr.write('ValueError: bad input\n');
  process.exit(3);
});
