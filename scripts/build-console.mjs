#!/usr/bin/env node
// postinstall: installs console/'s own dependencies (Vite, React, openapi-typescript with the TypeScript 5 it
// needs beside the root's TypeScript 7) and builds the console into console/dist, which the service serves.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const consoleDir = fileURLToPath(new URL('../console/', import.meta.url));
if (!existsSync(`${consoleDir}package.json`)) {
  // An install before the sources are copied in (a Docker layer of package files only).
  process.stdout.write('console/ not present: console not built\n');
  process.exit(0);
}

function run(command, args) {
  const result = spawnSync(command, args, { cwd: consoleDir, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const npm = process.env.npm_execpath;
const npmCommand = npm ? [process.execPath, [npm]] : ['npm', []];
const installed = `${consoleDir}node_modules/.package-lock.json`;
const upToDate =
  existsSync(installed) && statSync(installed).mtimeMs >= statSync(`${consoleDir}package-lock.json`).mtimeMs;
if (!upToDate) run(npmCommand[0], [...npmCommand[1], 'ci', '--no-audit', '--no-fund', '--include=dev']);
run(process.execPath, [`${consoleDir}node_modules/vite/bin/vite.js`, 'build', '--logLevel', 'warn']);
