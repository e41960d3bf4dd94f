import type { WebhookEvent } from '../db/schema/webhooks.js';
import type { EndingRun } from '../run-record/types.js';

/** The event a run's end sends; a canceled run sends none. */
export function eventForRun(run: Pick<EndingRun, 'status'>): WebhookEvent | null {
  switch (run.status) {
    case 'succeeded':
      return 'run.succeeded';
    case 'failed':
      return 'run.failed';
    case 'canceled':
      return null;
  }
}

/**
 * The body of SPEC §6 around the three values only the ending statement knows (the deployment id,
 * started_at, completed_at), which it writes after `head`, after `middle` and after `tail` as JSON
 * values, followed by `}}` (repository.ts runDeliveriesInEnd). The body is serialised once, at the
 * run's end, so every attempt sends the same bytes. A failed run has `output: {}` (the spec types
 * it as an object) and its `error_message`.
 */
export function payloadPieces(event: WebhookEvent, run: EndingRun, now = new Date()) {
  const known: Record<string, unknown> = {
    status: run.status,
    output: run.status === 'succeeded' ? (run.output ?? {}) : {},
  };
  if (run.status === 'failed') known.error_message = run.error_message;
  const head = `{"event":${JSON.stringify(event)},"timestamp":${JSON.stringify(now.toISOString())},"data":{"run_id":${JSON.stringify(run.id)},"deployment_id":`;
  return { head, middle: `,${JSON.stringify(known).slice(1, -1)},"started_at":`, tail: ',"completed_at":' };
}
