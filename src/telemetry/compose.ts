import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/types.js';
import { createUsageService } from '../usage/service.js';
import { loadPriceFile, priceTable } from './prices.js';
import { createUsageWriter } from './usage-writer.js';

/**
 * What a run cost and where its time went: the price table (built-in, then MODEL_PRICES_FILE),
 * the writer of runs' usage, and the usage summaries.
 */
export async function composeTelemetry(options: {
  config: Pick<Config, 'modelPricesFile' | 'tracing'>;
  db: Kysely<Database>;
  logger: Logger;
}) {
  const { config, db, logger } = options;
  const prices = priceTable(config.modelPricesFile ? await loadPriceFile(config.modelPricesFile) : {});
  return {
    prices,
    usageWriter: createUsageWriter({ db, prices, logger }),
    usage: createUsageService(db),
  };
}
