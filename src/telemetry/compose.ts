import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/types.js';
import { loadPriceFile, priceTable } from './prices.js';
import { runTraceIds } from './trace-context.js';
import { createUsageWriter } from './usage-writer.js';

/**
 * What a run cost and where its time went: the price table (built-in, then MODEL_PRICES_FILE),
 * the writer of runs' usage, and runs' traces when OTLP is configured.
 */
export async function composeTelemetry(options: {
  config: Pick<Config, 'modelPricesFile' | 'tracing'>;
  db: Kysely<Database>;
  logger: Logger;
}) {
  const { config, db, logger } = options;
  const prices = priceTable(config.modelPricesFile ? await loadPriceFile(config.modelPricesFile) : {});
  // Turned off, tracing costs nothing: the OpenTelemetry SDK is not even loaded.
  const tracer = config.tracing ? await (await import('./run-tracer.js')).createRunTracer(config.tracing) : undefined;
  return {
    prices,
    usageWriter: createUsageWriter({ db, prices, logger }),
    tracer,
    /** A new run's trace ids; undefined with tracing off (its `trace_id` stays null). */
    traceIds: tracer ? runTraceIds : undefined,
    async stop(): Promise<void> {
      await tracer?.shutdown().catch((error: unknown) => logger.warn({ err: error }, 'sending the last traces failed'));
    },
  };
}
