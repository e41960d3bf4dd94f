import { newId } from '../../src/ids.js';

/** The rows both sides of the tables bench hold: six columns (text, number, boolean, datetime, select, json). */
export const STAGES = ['lead', 'qualified', 'proposal', 'won', 'lost'];

export interface DataRow {
  id: string;
  title: string;
  score: number;
  active: boolean;
  due: string;
  stage: string;
  meta: { source: string; tags: string[]; n: number };
}

/** Deterministic rows (mulberry32), so every run measures the same data. */
export function makeRows(count: number): DataRow[] {
  let seed = 42;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];
  const start = Date.UTC(2024, 0, 1);
  return Array.from({ length: count }, (_, i) => ({
    id: newId('row'),
    title: `${words[Math.floor(random() * 10)]} ${words[Math.floor(random() * 10)]} ${i}`,
    score: Math.round(random() * 100_000) / 100,
    active: random() < 0.5,
    due: new Date(start + Math.floor(random() * 365 * 86_400_000)).toISOString(),
    stage: STAGES[Math.floor(random() * STAGES.length)] as string,
    meta: { source: words[i % 10] as string, tags: ['a', 'b'].slice(0, i % 3), n: i },
  }));
}
