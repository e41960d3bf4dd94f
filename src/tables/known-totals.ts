import { createHash } from 'node:crypto';
import type { KnownTotal } from './row-repository.js';

const CAPACITY = 1000;

/**
 * The last total counted for each table, definition revision and filter, with the table's
 * `data_version` it was counted at. The query statement uses one only while the version it reads
 * in its own snapshot is still that one, so an answer never depends on this memory being fresh.
 */
export function createKnownTotals(capacity = CAPACITY) {
  const totals = new Map<string, KnownTotal>();
  return {
    keyOf(tableId: string, revision: number, filter: unknown): string {
      const digest = createHash('sha1')
        .update(JSON.stringify(filter ?? null))
        .digest('base64');
      return `${tableId}/${revision}/${digest}`;
    },
    get(key: string): KnownTotal | undefined {
      return totals.get(key);
    },
    set(key: string, known: KnownTotal): void {
      if (known.version < 0) return;
      totals.delete(key);
      totals.set(key, known);
      if (totals.size > capacity) {
        const oldest = totals.keys().next().value;
        if (oldest !== undefined) totals.delete(oldest);
      }
    },
  };
}
