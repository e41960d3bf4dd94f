import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');

/** Every specifier a file imports or re-exports: `import type` and `export … from` included, dynamic too. */
const IMPORT = /(?:^|[\n;])\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]/g;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

function tsFiles(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => path.join(root, name));
}

/** File → the files of `root` it imports (relative specifiers only; `x.js` is `x.ts` on disk). */
function importGraph(root: string): Map<string, string[]> {
  const files = new Set(tsFiles(root));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets = new Set<string>();
    for (const match of [...text.matchAll(IMPORT), ...text.matchAll(DYNAMIC)]) {
      const specifier = match[1] as string;
      if (!specifier.startsWith('.')) continue;
      const resolved = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '');
      const target = [`${resolved}.ts`, `${resolved}.d.ts`, path.join(resolved, 'index.ts')].find((f) => files.has(f));
      if (target) targets.add(target);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/** The circles of a graph, each named by its files in import order (first file repeated at the end). */
function importCircles(root: string): string[] {
  const graph = importGraph(root);
  const name = (file: string) => path.relative(root, file);
  const circles: string[] = [];
  for (const group of stronglyConnected(graph)) {
    const start = group.sort()[0] as string;
    const members = new Set(group);
    if (group.length === 1 && !graph.get(start)?.includes(start)) continue;
    circles.push(shortestCircle(graph, start, members).map(name).join(' → '));
  }
  return circles.sort();
}

/** Tarjan's strongly connected components. */
function stronglyConnected(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node) as number);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      group.push(member);
      if (member === node) break;
    }
    groups.push(group);
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return groups;
}

/** The shortest path from `start` back to itself inside one component (breadth first). */
function shortestCircle(graph: Map<string, string[]>, start: string, members: Set<string>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift() as string;
    for (const next of graph.get(node) ?? []) {
      if (!members.has(next)) continue;
      if (next === start) {
        const path = [start];
        for (let at: string | undefined = node; at !== undefined && at !== start; at = cameFrom.get(at)) path.push(at);
        return [start, ...path.slice(1).reverse(), start];
      }
      if (cameFrom.has(next)) continue;
      cameFrom.set(next, node);
      queue.push(next);
    }
  }
  return [start];
}

/**
 * The rooms of `root` (a top-level folder, or a file at the top) that import each other, directly
 * or round a longer loop of rooms: each group sorted, as "a ⇄ b ⇄ c". A group means an arrow that
 * runs back up: no order of the rooms puts every importer above what it imports.
 */
function roomCircles(root: string): string[] {
  const room = (file: string) => path.relative(root, file).split(path.sep)[0] as string;
  const rooms = new Map<string, string[]>();
  for (const [file, targets] of importGraph(root)) {
    const from = room(file);
    const to = new Set(rooms.get(from) ?? []);
    for (const target of targets) if (room(target) !== from) to.add(room(target));
    rooms.set(from, [...to]);
  }
  return stronglyConnected(rooms)
    .filter((group) => group.length > 1)
    .map((group) => group.sort().join(' ⇄ '))
    .sort();
}

describe('the import graph of src/', () => {
  it('has no circle, type-only imports included', () => {
    expect(importCircles(SRC)).toEqual([]);
  });

  it('has no two rooms (top-level folders and files) that import each other, so no arrow runs back up', () => {
    expect(roomCircles(SRC)).toEqual([]);
  });

  it('finds rooms that import each other round a loop, through files that do not', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'crewd-import-rooms-'));
    try {
      for (const folder of ['runs', 'execution', 'record']) mkdirSync(path.join(root, folder));
      writeFileSync(path.join(root, 'runs/service.ts'), "import '../execution/queue.js';\n");
      writeFileSync(path.join(root, 'execution/queue.ts'), "import type { End } from '../record/types.js';\n");
      writeFileSync(path.join(root, 'record/types.ts'), 'export interface End {}\n');
      writeFileSync(path.join(root, 'record/observer.ts'), "import type { Limits } from '../runs/limits.js';\n");
      writeFileSync(path.join(root, 'runs/limits.ts'), 'export interface Limits {}\n');
      writeFileSync(path.join(root, 'top.ts'), "import './runs/service.js';\n");
      expect(importCircles(root)).toEqual([]);
      expect(roomCircles(root)).toEqual(['execution ⇄ record ⇄ runs']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('finds a circle made of type-only imports and re-exports, and names it', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'crewd-import-graph-'));
    try {
      mkdirSync(path.join(root, 'a'));
      mkdirSync(path.join(root, 'b'));
      writeFileSync(
        path.join(root, 'a/one.ts'),
        "import type {\n  Two,\n} from '../b/two.js';\nexport type One = Two;\n",
      );
      writeFileSync(path.join(root, 'b/two.ts'), "export type { Three } from '../a/three.js';\n");
      writeFileSync(path.join(root, 'a/three.ts'), "export { type One } from './one.js';\n");
      writeFileSync(path.join(root, 'above.ts'), "import { type One } from './a/one.js';\nimport './a/three.js';\n");
      writeFileSync(path.join(root, 'self.ts'), "const later = () => import('./self.js');\n");
      expect(importCircles(root)).toEqual(['a/one.ts → b/two.ts → a/three.ts → a/one.ts', 'self.ts → self.ts']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
