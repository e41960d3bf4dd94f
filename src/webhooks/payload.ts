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

/** A run's end as far as its webhook body is known before the end is written. */
export type EndingRunBody = Pick<FinishedRun, 'id' | 'status' | 'output' | 'error_message'>;

/**
 * The body of SPEC §6 around the three values only the ending statement knows (the deployment id,
 * started_at, completed_at), which go after `head`, after `middle` and after `tail` as JSON values,
 * followed by `}}`. Both ways of building a body use it, so they send the same bytes.
 * A failed run has `output: {}` (the spec types it as an object) and its `error_message`.
 */
export function payloadPieces(event: WebhookEvent, run: EndingRunBody, now = new Date()) {
  const known: Record<string, unknown> = {
    status: run.status,
    output: run.status === 'succeeded' ? (run.output ?? {}) : {},
  };
  if (run.status === 'failed') known.error_message = run.error_message;
  const head = `{"event":${JSON.stringify(event)},"timestamp":${JSON.stringify(now.toISOString())},"data":{"run_id":${JSON.stringify(run.id)},"deployment_id":`;
  return { head, middle: `,${JSON.stringify(known).slice(1, -1)},"started_at":`, tail: ',"completed_at":' };
}

/** The body of SPEC §6, serialised once at enqueue so every attempt sends the same bytes. */
export function buildPayload(event: WebhookEvent, run: FinishedRun, now = new Date()): string {
  const { head, middle, tail } = payloadPieces(event, run, now);
  const startedAt = JSON.stringify(run.started_at?.toISOString() ?? null);
  return `${head}${JSON.stringify(run.deployment_id)}${middle}${startedAt}${tail}${JSON.stringify(run.completed_at.toISOString())}}}`;
}
