#!/usr/bin/env node
// Runs Biome's platform binary. The binaries are optionalDependencies (linux x64/arm64) rather than
// the `@biomejs/biome` wrapper, whose lock entries for every other platform break `npm ci` on
// registries that mirror only Linux packages. Elsewhere: `npm install --no-save @biomejs/biome`.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const candidates = [`@biomejs/cli-${process.platform}-${process.arch}/biome`, '@biomejs/biome/bin/biome'];

let binary;
for (const candidate of candidates) {
  try {
    binary = require.resolve(candidate);
    break;
  } catch {}
}
if (!binary) {
  process.stderr.write(
    `No Biome binary for ${process.platform}-${process.arch}: run \`npm install --no-save @biomejs/biome\`\n`,
  );
  process.exit(1);
}
const isWrapper = binary.endsWith('bin/biome');
const result = spawnSync(
  isWrapper ? process.execPath : binary,
  isWrapper ? [binary, ...process.argv.slice(2)] : process.argv.slice(2),
  {
    stdio: 'inherit',
  },
);
process.exit(result.status ?? 1);
