// Reports a failure through the protocol, then exits 0: the run still fails with that error.
process.stdin.resume();
process.stdin.on('end', () => {
  process.stdout.write(`${JSON.stringify({ type: 'log', data: { message: 'about to fail' } })}\n`);
  process.stdout.write(
    `${JSON.stringify({ type: 'run.failed', data: { error: 'the crew could not finish its task' } })}\n`,
  );
});
