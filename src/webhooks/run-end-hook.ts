import type { RunEndHook } from '../run-record/types.js';
import type { DeliveryOutbox, WebhookService } from './service.js';

/**
 * Joins a run's end: its deliveries are written by the statement that ends the run and handed to
 * the worker once it has committed, so a delivery is never sent for an end that rolled back.
 */
export function webhookRunEndHook(webhooks: WebhookService, outbox: DeliveryOutbox): RunEndHook {
  return {
    applies: (run) => webhooks.hasWebhooks(run.deploymentId),
    joinEnd(run) {
      // Without a lease (the worker is stopped) the rows wait for a claim by any instance's worker.
      const lease = outbox.leaseForNew();
      const part = webhooks.joinRunEnd(run, lease);
      if (!part) return null;
      return {
        ctes: part.ctes,
        result: part.result,
        committed(result) {
          const written = part.written(result);
          if (lease && written.length > 0) return () => outbox.sendCommitted(written);
          return undefined;
        },
      };
    },
  };
}
