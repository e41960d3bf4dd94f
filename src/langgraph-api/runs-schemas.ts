import { z } from 'zod';
import { isoDate } from '../http/pagination.js';
import { jsonObject, limitField, offsetField, optionalObject } from './schemas.js';
import { STREAM_MODES } from './stream-framing.js';

const nullish = <T extends z.ZodType>(schema: T) => schema.nullish().transform((value) => value ?? undefined);

export const runStatus = z.enum(['pending', 'running', 'success', 'error', 'timeout', 'interrupted']);
export const multitaskStrategy = z.enum(['reject', 'interrupt', 'rollback', 'enqueue']);
const nodes = z.union([z.literal('*'), z.array(z.string())]);
const streamMode = z.enum(STREAM_MODES);

/**
 * A run's body as the SDKs send it (`runs.create`, `stream`, `wait`). Fields crewd ignores are
 * listed with the reason in docs/langgraph.md; fields it cannot honour are refused in runs.ts.
 */
export const runCreateBody = z.object({
  assistant_id: z.string().min(1, 'must not be empty'),
  input: z.unknown().optional().describe('the graph input; null or absent with a command, or to go on from a stop'),
  command: nullish(
    z.object({
      resume: z.unknown().optional(),
      update: z.unknown().optional(),
      goto: z.unknown().optional(),
    }),
  ),
  config: optionalObject,
  context: optionalObject,
  metadata: optionalObject,
  stream_mode: nullish(z.union([streamMode, z.array(streamMode)])),
  stream_subgraphs: nullish(z.boolean()),
  stream_resumable: nullish(z.boolean()).describe('ignored: every run’s stream can be resumed'),
  feedback_keys: z.unknown().optional().describe('ignored: crewd has no LangSmith feedback'),
  interrupt_before: nullish(nodes),
  interrupt_after: nullish(nodes),
  checkpoint: z.unknown().optional().describe('refused unless null: crewd runs from the thread’s latest state'),
  checkpoint_id: nullish(z.string()).describe('refused: crewd runs from the thread’s latest state'),
  checkpoint_during: z.unknown().optional().describe('ignored: crewd writes one checkpoint per run'),
  durability: z.unknown().optional().describe('ignored: crewd writes one checkpoint per run'),
  strict_resume: z.unknown().optional().describe('ignored'),
  webhook: nullish(z.string()).describe('refused: use crewd’s webhooks (POST /v1/webhooks)'),
  multitask_strategy: nullish(multitaskStrategy),
  on_completion: nullish(z.enum(['delete', 'keep'])).describe('ignored: a stateless run has no thread in crewd'),
  on_disconnect: nullish(z.enum(['cancel', 'continue'])),
  after_seconds: nullish(z.number().min(0)).describe('refused above 0: runs start at once (use a cron)'),
  if_not_exists: nullish(z.enum(['create', 'reject'])),
  langsmith_tracer: z.unknown().optional().describe('ignored'),
});
export type RunCreateBody = z.infer<typeof runCreateBody>;

export const runSchema = z
  .object({
    run_id: z.string(),
    thread_id: z.string().nullable(),
    assistant_id: z.string(),
    created_at: isoDate,
    updated_at: isoDate,
    status: runStatus,
    metadata: jsonObject,
    multitask_strategy: multitaskStrategy,
    kwargs: jsonObject,
  })
  .meta({ id: 'LangGraphRun' });
export type LangGraphRun = z.infer<typeof runSchema>;

export const threadRunParams = z.object({ thread_id: z.string(), run_id: z.string() });
export const threadParams = z.object({ thread_id: z.string() });
export const runParams = z.object({ run_id: z.string() });

export const listRunsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  offset: z.coerce.number().int().min(0).default(0),
  status: runStatus.optional(),
  select: z.unknown().optional().describe('ignored: runs are answered whole'),
});

/** A query's yes/no, as the SDKs send it. */
export const flag = z
  .enum(['0', '1', 'true', 'false'])
  .optional()
  .transform((value) => value === '1' || value === 'true');

export const cancelQuery = z.object({
  wait: flag,
  action: z.enum(['interrupt', 'rollback']).default('interrupt'),
  reason: z.string().optional().describe('ignored'),
});

export const joinQuery = z.object({ cancel_on_disconnect: flag });

export const joinStreamQuery = z.object({
  cancel_on_disconnect: flag,
  stream_mode: z.union([streamMode, z.array(streamMode)]).optional(),
  namespace: z.unknown().optional().describe('ignored'),
  checkpoint_id: z.unknown().optional().describe('ignored'),
  last_event_id: z
    .string()
    .regex(/^\d+$/, 'must be a non-negative integer')
    .optional()
    .describe('resume after this event id (as the Last-Event-ID header)'),
});

export const cancelManyBody = z.object({
  thread_id: nullish(z.string()),
  run_ids: nullish(z.array(z.string())),
  status: nullish(z.enum(['pending', 'running', 'all'])),
});

export const batchBody = z.array(runCreateBody).min(1, 'must hold at least one run').max(100, 'at most 100 runs');

export { limitField, offsetField };
