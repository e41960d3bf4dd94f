import type { WebhookEvent } from '../db/schema/webhooks.js';
import type { FinishedRun } from '../run-record/types.js';

/** The event a run's end sends; a canceled run sends none. */
export function eventForRun(run: Pick<FinishedRun, 'status'>): WebhookEvent | null {
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
 * The body of SPEC §6, serialised once at enqueue so every attempt sends the same bytes.
 * A failed run has `output: {}` (the spec types it as an object) and its `error_message`.
 */
export function buildPayload(event: WebhookEvent, run: FinishedRun, now = new Date()): string {
  const data: Record<string, unknown> = {
    run_id: run.id,
    deployment_id: run.deployment_id,
    status: run.status,
    output: run.status === 'succeeded' ? (run.output ?? {}) : {},
  };
  if (run.status === 'failed') data.error_message = run.error_message;
  data.started_at = run.started_at?.toISOString() ?? null;
  data.completed_at = run.completed_at.toISOString();
  return JSON.stringify({ event, timestamp: now.toISOString(), data });
}
