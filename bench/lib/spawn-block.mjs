// `node spawn-block.mjs <MB>`: holds <MB> of memory, then prints the median milliseconds one
// child_process.spawn() blocks this process's event loop (fork copies the page tables of all of it).
import { spawn } from 'node:child_process';

const held = [];
for (let i = 0; i < Number(process.argv[2]); i++) held.push(Buffer.alloc(1 << 20, 1));
const blocked = [];
for (let i = 0; i < 60; i++) {
  const start = performance.now();
  const child = spawn('true', [], { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  blocked.push(performance.now() - start);
  await new Promise((resolve) => child.once('exit', resolve));
}
blocked.sort((a, b) => a - b);
process.stdout.write(`${blocked[30]} ${held.length}\n`);
