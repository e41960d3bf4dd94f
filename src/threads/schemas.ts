import { z } from 'zod';
import { environmentSchema } from '../deployments/schemas.js';
import { isoDate, paginationQuery } from '../http/pagination.js';
import { runStatusSchema } from '../runs/schemas.js';

const jsonObject = z.record(z.string(), z.unknown());

export const interruptSchema = z
  .object({ id: z.string().optional(), value: z.unknown() })
  .meta({ id: 'ThreadInterrupt' });

export const threadStatusSchema = z.enum(['idle', 'busy', 'interrupted', 'error']);

export const threadSchema = z
  .object({
    thread_id: z.string(),
    deployment_id: z
      .string()
      .nullable()
      .describe('null for a thread made through the LangGraph API until its first run binds it to a deployment'),
    status: threadStatusSchema,
    metadata: jsonObject,
    values: jsonObject.nullable().describe('current thread state; null until set'),
    interrupts: z
      .array(interruptSchema)
      .describe('what the last run stopped at when the thread is `interrupted` (run.interrupted); [] otherwise'),
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

export const runCommandSchema = z
  .strictObject({
    resume: z.unknown().optional().describe('the value the interrupt resumes with (LangGraph `Command(resume=…)`)'),
    update: jsonObject.optional().describe('changes to the state before resuming (LangGraph `Command(update=…)`)'),
  })
  .meta({ id: 'RunCommand' });

export const createThreadRunBody = z.strictObject({
  input: jsonObject.default({}),
  environment: environmentSchema.default('production'),
  command: runCommandSchema
    .optional()
    .describe(
      'resumes an interrupted thread; given to the runner on standard input (400 unless the thread is interrupted)',
    ),
  multitask_strategy: z
    .enum(['reject', 'enqueue', 'interrupt', 'rollback'])
    .default('reject')
    .describe(
      'when the thread is busy: `reject` answers 409; `enqueue` queues the run (202, `pending`) to start after the runs before it; `interrupt` cancels the current run and starts this one once its process stopped; `rollback` does the same and deletes the current run, with its events and checkpoint',
    ),
});

export const createdThreadRunSchema = z
  .object({
    run_id: z.string(),
    thread_id: z.string(),
    version_id: z.string(),
    version_number: z.number().int(),
    status: runStatusSchema,
  })
  .meta({ id: 'CreatedThreadRun' });
