import { z } from 'zod';
import { environmentSchema } from '../deployments/schemas.js';
import { isoDate, paginationQuery } from '../http/pagination.js';
import { isTimeZone, scheduleProblem } from './schedule.js';

export const multitaskStrategySchema = z.enum(['reject', 'enqueue', 'interrupt', 'rollback']);

const jsonObject = z.record(z.string(), z.unknown());

export const cronSchema = z
  .object({
    id: z.string(),
    deployment_id: z.string(),
    schedule: z.string(),
    timezone: z.string(),
    input: jsonObject,
    environment: environmentSchema,
    thread_id: z.string().nullable(),
    multitask_strategy: multitaskStrategySchema,
    enabled: z.boolean(),
    next_run_at: isoDate.nullable().describe('when the next run starts; null while disabled'),
    last_run_at: isoDate.nullable().describe('when the cron last started a run'),
    last_run_id: z.string().nullable(),
    last_error: z.string().nullable().describe('why the last due time started no run; null once one starts'),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .meta({ id: 'Cron' });

export const scheduleField = z
  .string()
  .trim()
  .max(200, 'must be at most 200 characters')
  .superRefine((value, context) => {
    const problem = scheduleProblem(value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  })
  .describe('cron expression: 5 fields (minute hour day month weekday), or 6 with seconds first');

export const timezoneField = z
  .string()
  .max(100, 'must be at most 100 characters')
  .refine(isTimeZone, 'must be an IANA time zone such as "UTC" or "Europe/Paris"')
  .describe('IANA time zone the schedule is read in');

const threadId = z.string().min(1, 'must not be empty').describe('start each run in this thread of the deployment');

const multitaskStrategy = multitaskStrategySchema.describe(
  'what a run on a busy thread does (CONTRACTS §10); until strategies land, a busy thread is recorded as last_error',
);

export const createCronBody = z.strictObject({
  deployment_id: z.string().min(1, 'must not be empty'),
  schedule: scheduleField,
  timezone: timezoneField.default('UTC'),
  input: jsonObject.default({}).describe('the input of every run'),
  environment: environmentSchema.default('production'),
  thread_id: threadId.optional(),
  enabled: z.boolean().default(true),
  multitask_strategy: multitaskStrategy.default('enqueue'),
});

export const updateCronBody = z.strictObject({
  deployment_id: z
    .unknown()
    .refine(() => false, 'cannot be changed; create a new cron for the other deployment')
    .optional()
    .transform(() => undefined)
    .describe('not accepted: a cron stays with its deployment'),
  schedule: scheduleField.optional(),
  timezone: timezoneField.optional(),
  input: jsonObject.optional(),
  environment: environmentSchema.optional(),
  thread_id: threadId.nullable().optional().describe('null: runs outside any thread'),
  enabled: z.boolean().optional(),
  multitask_strategy: multitaskStrategy.optional(),
});

export const cronParams = z.object({ id: z.string() });

export const listCronsQuery = z.strictObject({
  deployment_id: z.string().min(1, 'must not be empty').optional(),
  ...paginationQuery(50),
});

export type CreateCronInput = z.output<typeof createCronBody>;
export type UpdateCronInput = z.output<typeof updateCronBody>;
