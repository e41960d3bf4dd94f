import { z } from 'zod';
import { environmentSchema } from '../deployments/schemas.js';
import { isoDate, paginationQuery } from '../http/pagination.js';
import { runStatusSchema } from '../runs/schemas.js';

const jsonObject = z.record(z.string(), z.unknown());

export const threadStatusSchema = z.enum(['idle', 'busy', 'interrupted', 'error']);

export const threadSchema = z
  .object({
    thread_id: z.string(),
    deployment_id: z.string(),
    status: threadStatusSchema,
    metadata: jsonObject,
    values: jsonObject.nullable().describe('current thread state; null until set'),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .meta({ id: 'Thread' });

export const checkpointSchema = z
  .object({
    checkpoint_id: z.string(),
    thread_id: z.string(),
    run_id: z.string().nullable().describe('the run whose success wrote it; null for a PATCH of values'),
    values: jsonObject.nullable(),
    created_at: isoDate,
  })
  .meta({ id: 'ThreadCheckpoint' });

export const createThreadBody = z
  .strictObject({
    deployment_id: z.string().min(1, 'must not be empty'),
    metadata: jsonObject.default({}),
    values: jsonObject.optional().describe('initial state'),
  })
  .meta({ examples: [{ deployment_id: 'dep_01jd3x9k2m4n5p6q7r8s9t0v1w', metadata: { customer: 'acme' } }] });

export const listThreadsQuery = z.strictObject({
  deployment_id: z.string().min(1, 'must not be empty'),
  status: threadStatusSchema.optional(),
  ...paginationQuery(20),
});

export const threadParams = z.object({ id: z.string() });

export const historyQuery = z.strictObject(paginationQuery(20));

export const patchThreadBody = z.strictObject({
  metadata: jsonObject.optional().describe('replaces the metadata'),
  values: jsonObject.nullable().optional().describe('replaces the values (null clears them); refused while busy'),
});

export const createThreadRunBody = z
  .strictObject({
    input: jsonObject.default({}),
    environment: environmentSchema.default('production'),
  })
  .meta({ examples: [{ input: { message: 'And what about Sweden?' } }] });

export const createdThreadRunSchema = z
  .object({
    run_id: z.string(),
    thread_id: z.string(),
    version_id: z.string(),
    version_number: z.number().int(),
    status: runStatusSchema,
  })
  .meta({ id: 'CreatedThreadRun' });
