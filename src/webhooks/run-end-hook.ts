import type { RunEndHook } from '../run-record/types.js';
import type { DeliveryOutbox, WebhookService } from './service.js';

/**
 * Joins a run's end: its deliveries are written in the ending transaction and handed to the
 * worker once that transaction has committed, so a delivery is never sent for an end that rolled back.
 */
export function webhookRunEndHook(webhooks: WebhookService, outbox: DeliveryOutbox): RunEndHook {
  return {
    applies: (run) => webhooks.hasWebhooks(run.deploymentId),
    async inTransaction(trx, run) {
      // Without a lease (the worker is stopped) the rows wait for a claim by any instance's worker.
      const lease = outbox.leaseForNew();
      const written = await webhooks.enqueueForRun(trx, run, lease);
      if (lease && written.length > 0) return () => outbox.sendCommitted(written);
    },
  };
}
