import { z } from 'zod';
import { isoDate } from '../http/pagination.js';
import { tokenCounts } from '../telemetry/schemas.js';

export const usageQuery = z.strictObject({
  deployment_id: z.string().min(1).optional(),
  from: z.iso.datetime({ offset: true, message: 'must be an ISO time' }).optional().describe('default 30 days ago'),
  to: z.iso.datetime({ offset: true, message: 'must be an ISO time' }).optional().describe('default now'),
  group_by: z
    .enum(['day', 'deployment', 'model'], { message: 'must be day, deployment or model' })
    .default('day')
    .describe('`day`: keys are UTC dates (YYYY-MM-DD)'),
});

export const usageRowSchema = z
  .object({
    key: z.string().describe('the day, deployment id or model'),
    ...tokenCounts,
    runs: z.number().int(),
    cost: z.number().nullable().describe('USD over priced models; null when none was priced'),
  })
  .meta({ id: 'UsageRow' });

export const usageResponse = z
  .object({ usage: z.array(usageRowSchema), from: isoDate, to: isoDate })
  .meta({ id: 'Usage' });
