/** `npm run bench -- <name>` runs bench/<name>.ts; each prints its figures as `figure: …` lines. */
const BENCHES = [
  'tables',
  'runs',
  'webhooks',
  'scale',
  'console',
  'crons',
  'fanout',
  'builds',
  'python',
  'mcp',
  'throughput',
  'tracing',
  'langgraph',
  'sandbox',
] as const;

const name = process.argv[2];
if (!name || !(BENCHES as readonly string[]).includes(name)) {
  process.stderr.write(`usage: npm run bench -- <${BENCHES.join('|')}>\n`);
  process.exit(2);
}

try {
  const bench = (await import(`./${name}.js`)) as { run(): Promise<void> };
  await bench.run();
  process.exit(0);
} catch (error) {
  process.stderr.write(
    `bench ${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
}
