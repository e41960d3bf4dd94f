import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');

/** Every relative import of a file, `import type`, re-exports and dynamic ones included, as rooms/paths under src. */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(SRC, file), 'utf8');
  const found: string[] = [];
  const patterns = [
    /(?:^|[\n;])\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s*)?['"](\.[^'"]+)['"]/g,
    /\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) {
      found.push(path.relative(SRC, path.resolve(path.dirname(path.join(SRC, file)), match[1] as string)));
    }
  }
  return found;
}

const filesOf = (room: string) =>
  readdirSync(path.join(SRC, room), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => path.join(room, name));

const roomOf = (target: string) => target.split(path.sep)[0] as string;

/** `file → target` for each import of a file of `room` into one of `forbidden`. */
function importsInto(room: string, forbidden: readonly string[]): string[] {
  return filesOf(room).flatMap((file) =>
    importsOf(file)
      .filter((target) => forbidden.includes(roomOf(target)))
      .map((target) => `${file} → ${target}`),
  );
}

/** docs/ARCHITECTURE.md, "How a run flows": runs → execution → run record, and news back up only as signals. */
describe("a run's path through the rooms", () => {
  it('goes one way: run-record imports neither execution nor runs, execution does not import runs', () => {
    expect(importsInto('run-record', ['execution', 'runs'])).toEqual([]);
    expect(importsInto('execution', ['runs'])).toEqual([]);
  });

  it('keeps the signal hub and the event bus below the rooms that use them', () => {
    expect(importsInto('signals', ['runs', 'execution', 'run-record', 'threads', 'events', 'streams'])).toEqual([]);
    expect(importsInto('events', ['runs', 'execution', 'streams', 'signals'])).toEqual([]);
  });

  it('finds the imports it looks for (it would miss nothing it should see)', () => {
    expect(importsOf('runs/service.ts')).toContain(path.join('execution', 'port.js'));
    expect(importsInto('runs', ['execution'])).toContain(`${path.join('runs', 'service.ts')} → execution/port.js`);
  });
});
