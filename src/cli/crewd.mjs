#!/usr/bin/env node
// The `crewd` command from a checkout (package.json "bin"): runs the TypeScript sources through tsx.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('./main.ts');
process.exitCode = await runCli(process.argv.slice(2));
