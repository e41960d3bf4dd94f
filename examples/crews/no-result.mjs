// Exits 0 without printing a result.
process.stdin.resume();
process.stdin.on('end', () => {
  process.stdout.write(`${JSON.stringify({ type: 'log', data: { message: 'done, but no result' } })}\n`);
});
