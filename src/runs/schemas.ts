import { z } from 'zod';
import { environmentSchema } from '../deployments/schemas.js';
import { isoDate, paginationQuery } from '../http/pagination.js';
import { runUsageSchema } from '../telemetry/schemas.js';

export const runStatusSchema = z.enum(['pending', 'running', 'succeeded', 'failed', 'canceled']);

const jsonObject = z.record(z.string(), z.unknown());

export const runSchema = z
  .object({
    id: z.string(),
    version_id: z.string(),
    deployment_id: z.string(),
    environment: environmentSchema,
    thread_id: z.string().nullable(),
    cron_id: z.string().nullable().describe('the cron that started the run, if one did'),
    status: runStatusSchema,
    input: jsonObject,
    output: jsonObject.nullable().describe('final output; only when succeeded'),
    error_message: z.string().nullable().describe('only when failed'),
    created_at: isoDate,
    started_at: isoDate.nullable(),
    completed_at: isoDate.nullable(),
    usage: runUsageSchema
      .nullable()
      .describe('tokens and cost of its LLM calls, by model; null until a call is reported'),
    trace_id: z.string().nullable().describe('its OpenTelemetry trace, when tracing is on'),
  })
  .meta({ id: 'Run' });

/** The fields a run list may be narrowed to (`fields`); `id` is always there. */
export const runFields = runSchema.keyof().options;
export type RunField = (typeof runFields)[number];

/** A run in a list: all its fields, or those `fields` names. */
export const listedRunSchema = runSchema.partial().required({ id: true }).meta({ id: 'ListedRun' });

export const createdRunSchema = z
  .object({
    run_id: z.string(),
    version_id: z.string(),
    version_number: z.number().int(),
    status: runStatusSchema.describe('`running`, or `pending` while MAX_CONCURRENT_RUNS runs are going'),
  })
  .meta({ id: 'CreatedRun' });

export const createRunBody = z
  .strictObject({
    deployment_id: z.string().min(1, 'must not be empty'),
    input: jsonObject.default({}).describe('passed to the crew on standard input'),
    environment: environmentSchema.default('production'),
    thread_id: z.string().min(1).optional().describe('run inside this thread of the same deployment'),
  })
  .meta({
    examples: [{ deployment_id: 'dep_01jd3x9k2m4n5p6q7r8s9t0v1w', input: { topic: 'solar panels in Norway' } }],
  });

export const idempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .min(1, 'must not be empty')
    .max(255, 'must be at most 255 characters')
    .optional()
    .describe('the same key with the same body within 24 hours answers the first response and starts nothing'),
  traceparent: z
    .string()
    .optional()
    .describe('W3C trace context: with tracing on, the run’s span is a child of this span'),
});

export const runParams = z.object({ id: z.string() });

export const listRunsQuery = z.strictObject({
  deployment_id: z.string().min(1).optional(),
  thread_id: z.string().min(1).optional(),
  cron_id: z.string().min(1).optional().describe('runs started by this cron'),
  status: runStatusSchema.optional(),
  fields: z
    .string()
    .transform((value, ctx) => {
      const names = value
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== '');
      const unknown = names.find((name) => !(runFields as readonly string[]).includes(name));
      if (unknown !== undefined || names.length === 0) {
        ctx.addIssue({ code: 'custom', message: `must be run fields separated by commas (${runFields.join(', ')})` });
        return z.NEVER;
      }
      return names as RunField[];
    })
    .optional()
    .describe(
      'the fields each run has, e.g. `id,status,usage`; default all. Leaving out input, output and usage keeps a list light',
    ),
  ...paginationQuery(50),
});

export const cancelResponse = z.object({ success: z.boolean(), status: z.literal('canceled') });

export const eventsQuery = z.strictObject({
  last_event_id: z
    .string()
    .regex(/^\d+$/, 'must be a non-negative integer')
    .optional()
    .describe('resume after this event id (as the Last-Event-ID header); 0 replays all'),
});
