#!/usr/bin/env node
// Runs every shell block (```sh) of the README, docs/ and the examples' READMEs, in reading order, in one bash
// session, as a user pasting them one after the other into one terminal would. A block fails the check when one of its
// commands exits non-zero (an HTTP error answer included: `curl` fails on one), when it uses a variable no earlier
// block set, or when the whole check runs past half an hour (the
// line naming each block as it starts shows which one hung). Usage forms are ```text blocks, not commands. A block the check cannot run
// on a test machine (Docker, a second machine) says why in a `<!-- docs check: not run: <reason> -->` line just above
// it; the check lists those with their reasons.
//
// What a reader substitutes, the check substitutes: `crewd_…` is the admin key the service printed, and
// `http://localhost:8080` the service's address (the check's service listens on a free port).
//
// Usage: node scripts/doc-commands.mjs --url URL --key KEY   (run from the repository, against a running service,
// with `crewd` on the PATH as `npm link` puts it; scripts/fresh-machine.sh runs it).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const SKIP_MARK = /^<!-- docs check: not run: (.+) -->$/;
const CHECK_SECONDS = 1800;

/** The documents in the order a reader takes them: the README, docs/ as docs/README.md lists them, the examples. */
function documents(root) {
  const index = readFileSync(path.join(root, 'docs/README.md'), 'utf8');
  const listed = [...index.matchAll(/\]\(([\w-]+\.md)\)/g)].map((m) => `docs/${m[1]}`);
  const rest = readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md') && !listed.includes(`docs/${f}`))
    .map((f) => `docs/${f}`);
  const examples = readdirSync(path.join(root, 'examples'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => `examples/${d.name}/README.md`)
    .filter((f) => {
      try {
        readFileSync(path.join(root, f));
        return true;
      } catch {
        return false;
      }
    });
  return ['README.md', ...new Set([...listed, ...rest]), ...examples.sort()];
}

/** The ```sh blocks of one document: their text, the line of their fence, and the reason when one is not run. */
function shellBlocks(file, text) {
  const lines = text.split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (lines[i].trim() !== '```sh') continue;
    const end = lines.findIndex((line, j) => j > i && line.trim() === '```');
    if (end < 0) throw new Error(`${file}:${i + 1}: a \`\`\`sh block is never closed`);
    let above = i - 1;
    while (above >= 0 && lines[above].trim() === '') above -= 1;
    const skip = above >= 0 ? SKIP_MARK.exec(lines[above].trim()) : null;
    blocks.push({ file, line: i + 1, body: lines.slice(i + 1, end).join('\n'), skipped: skip?.[1] });
    i = end;
  }
  return blocks;
}

function substitute(body, { url, key }) {
  return body.replaceAll('crewd_…', key).replaceAll('http://localhost:8080', url);
}

/** One bash script that sources each block in turn, from the repository, naming the block before it runs. */
function sessionScript(root, blocks, folder, values) {
  const parts = [
    'set -eEu -o pipefail',
    // An answer of 4xx or 5xx is a failed command, as a reader looking at it would take it (a command that chose
    // its own -f keeps it: curl refuses both at once).
    'curl() { for a in "$@"; do case "$a" in --fail | --fail-with-body | -[a-zA-Z]*f*) command curl "$@"; return;; esac; done; command curl --fail-with-body "$@"; }',
    // In a block's own command BASH_SOURCE[1] is the block's file and the line is the block's; else the block's end.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: bash's ${…}, not a template
    'failed() { local where="the block at $DOC line $FENCE"; [[ "${BASH_SOURCE[1]:-}" == */block-*.sh ]] && where="$DOC line $((FENCE + $1))"; echo "docs check: FAILED at $where: $BASH_COMMAND" >&2; }',
    "trap 'failed $LINENO' ERR",
  ];
  blocks.forEach((block, n) => {
    const file = path.join(folder, `block-${n}.sh`);
    writeFileSync(file, `${substitute(block.body, values)}\n`);
    parts.push(
      `cd ${JSON.stringify(root)}`,
      `DOC=${JSON.stringify(block.file)} FENCE=${block.line}`,
      `echo "==== docs check: $DOC line $FENCE" >&2`,
      `source ${JSON.stringify(file)}`,
    );
  });
  parts.push('echo "docs check: every block ran" >&2');
  return parts.join('\n');
}

function runBash(script, seconds) {
  return new Promise((resolve) => {
    const bash = spawn('bash', ['-c', script], { stdio: ['ignore', 'inherit', 'inherit'], detached: true });
    const timer = setTimeout(() => {
      console.error(`docs check: stopped after ${seconds} s`);
      process.kill(-bash.pid, 'SIGTERM');
    }, seconds * 1000);
    bash.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

async function main() {
  const { values } = parseArgs({ options: { url: { type: 'string' }, key: { type: 'string' } } });
  if (!values.url || !values.key) {
    console.error('usage: node scripts/doc-commands.mjs --url URL --key KEY');
    process.exit(2);
  }
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
  const blocks = documents(root).flatMap((file) => shellBlocks(file, readFileSync(path.join(root, file), 'utf8')));
  const run = blocks.filter((b) => !b.skipped);
  for (const b of blocks.filter((b) => b.skipped))
    console.error(`docs check: not run, ${b.file}:${b.line}: ${b.skipped}`);
  const folder = mkdtempSync(path.join(tmpdir(), 'crewd-docs-check-'));
  const code = await runBash(sessionScript(root, run, folder, values), CHECK_SECONDS);
  rmSync(folder, { recursive: true, force: true });
  console.error(`docs check: ${run.length} blocks to run, ${blocks.length - run.length} not run`);
  process.exit(code === 0 ? 0 : 1);
}

await main();
