import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { RunUsage } from '../db/schema/run-usage.js';
import type { Database } from '../db/types.js';
import { updateRunningUsage } from '../run-record/repository.js';
import type { PriceTable } from './prices.js';
import type { UsageTally } from './usage.js';

/** How long a running run's new calls wait to be written together. */
const WRITE_DELAY_MS = 1000;

/**
 * Keeps running runs' stored `usage` current: calls arriving within a second are written in one
 * statement, so a run making many calls costs about one update a second, and a run making none
 * costs nothing. The run's end writes the final sum (`final`), with its ending statement.
 */
export function createUsageWriter(options: { db: Kysely<Database>; prices: PriceTable; logger: Logger }) {
  const { db, prices, logger } = options;
  const timers = new Map<string, NodeJS.Timeout>();

  async function write(runId: string, tally: UsageTally): Promise<void> {
    timers.delete(runId);
    if (!tally.takeChanged()) return;
    const usage = tally.usage(prices);
    if (!usage) return;
    try {
      await updateRunningUsage(db, runId, usage);
    } catch (error) {
      logger.warn({ err: error, runId }, 'storing a running run’s usage failed; its end stores it');
    }
  }

  return {
    /** A call was added to the run's tally. */
    called(runId: string, tally: UsageTally): void {
      if (timers.has(runId)) return;
      const timer = setTimeout(() => void write(runId, tally), WRITE_DELAY_MS);
      timer.unref();
      timers.set(runId, timer);
    },

    /** The run is ending: no more interim writes; its usage as the end stores it (undefined: none). */
    final(runId: string, tally: UsageTally): RunUsage | undefined {
      const timer = timers.get(runId);
      if (timer) clearTimeout(timer);
      timers.delete(runId);
      return tally.usage(prices) ?? undefined;
    },
  };
}

export type UsageWriter = ReturnType<typeof createUsageWriter>;
