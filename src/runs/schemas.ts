import { z } from 'zod';
import { environmentSchema } from '../deployments/schemas.js';
import { isoDate, paginationQuery } from '../http/pagination.js';

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
  })
  .meta({ id: 'Run' });

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
});

export const runParams = z.object({ id: z.string() });

export const listRunsQuery = z.strictObject({
  deployment_id: z.string().min(1).optional(),
  thread_id: z.string().min(1).optional(),
  cron_id: z.string().min(1).optional().describe('runs started by this cron'),
  status: runStatusSchema.optional(),
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
