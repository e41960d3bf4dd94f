#!/usr/bin/env node
// The `crewd` command (package.json "bin"). From a checkout it runs the TypeScript sources through tsx; where the
// sources are not there (the container image, a package of the compiled code) it runs dist/, which needs no dev
// dependency.
import { existsSync } from 'node:fs';

const sources = new URL('../src/cli/main.ts', import.meta.url);
let runCli;
if (existsSync(sources)) {
  const { register } = await import('tsx/esm/api');
  register();
  ({ runCli } = await import(sources.href));
} else {
  ({ runCli } = await import(new URL('../dist/src/cli/main.js', import.meta.url).href));
}
process.exitCode = await runCli(process.argv.slice(2));
