import { z } from 'zod';
import { environmentSchema } from '../deployments/schemas.js';
import { isoDate, paginationQuery } from '../http/pagination.js';

export const webhookEventSchema = z.enum(['run.succeeded', 'run.failed']);

const name = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');

const targetUrl = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .refine((value) => {
    try {
      const url = new URL(value);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'must be an absolute http:// or https:// URL')
  .refine((value) => {
    try {
      const url = new URL(value);
      return url.username === '' && url.password === '';
    } catch {
      return true;
    }
  }, 'must not contain credentials')
  .describe('http(s) target; loopback, private, link-local and metadata addresses are refused');

const events = z
  .array(webhookEventSchema, { message: 'must be an array of events' })
  .min(1, 'must name at least one event');

export const webhookSchema = z
  .object({
    id: z.string(),
    deployment_id: z.string(),
    name: z.string(),
    url: z.string(),
    events: z.array(webhookEventSchema),
    environment: environmentSchema,
    enabled: z.boolean(),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .meta({ id: 'Webhook' });

export const createdWebhookSchema = webhookSchema
  .extend({ secret: z.string().describe('the signing secret; shown only in this response') })
  .meta({ id: 'CreatedWebhook' });

export const createWebhookBody = z
  .strictObject({
    deployment_id: z.string().min(1, 'must not be empty'),
    name,
    url: targetUrl,
    events,
    environment: environmentSchema.default('production'),
    enabled: z.boolean().default(true),
  })
  .meta({
    examples: [
      {
        deployment_id: 'dep_01jd3x9k2m4n5p6q7r8s9t0v1w',
        name: 'notify-slack-bridge',
        url: 'https://hooks.example.com/crewd',
        events: ['run.succeeded', 'run.failed'],
      },
    ],
  });

export const updateWebhookBody = z
  .strictObject({
    name: name.optional(),
    url: targetUrl.optional(),
    events: events.optional(),
    environment: environmentSchema.optional(),
    enabled: z.boolean().optional(),
  })
  .meta({ examples: [{ enabled: false }] });

export const secretSchema = z
  .object({ secret: z.string().describe('the new signing secret; the old one stops signing at once') })
  .meta({ id: 'WebhookSecret' });

export const deliverySchema = z
  .object({
    id: z.string().describe('also the X-Service-Delivery header, the same on every attempt'),
    event: webhookEventSchema,
    run_id: z.string(),
    status: z.enum(['pending', 'succeeded', 'failed']),
    attempts: z.number().int(),
    response_status: z.number().int().nullable(),
    error_message: z.string().nullable(),
    created_at: isoDate,
    last_attempt_at: isoDate.nullable(),
    next_attempt_at: isoDate.nullable(),
  })
  .meta({ id: 'WebhookDelivery' });

export const deliveryDetailSchema = deliverySchema
  .extend({
    payload: z.record(z.string(), z.unknown()).describe('the body every attempt sends'),
    attempt_history: z.array(
      z.object({
        number: z.number().int(),
        attempted_at: isoDate,
        duration_ms: z.number().int(),
        response_status: z.number().int().nullable(),
        error_message: z.string().nullable(),
      }),
    ),
  })
  .meta({ id: 'WebhookDeliveryDetail' });

export const redeliverSchema = z
  .object({ id: z.string(), status: z.literal('pending') })
  .meta({ id: 'WebhookRedelivery' });

export const incomingWebhookSchema = z
  .object({
    id: z.string(),
    deployment_id: z.string(),
    environment: environmentSchema,
    name: z.string().nullable(),
    created_at: isoDate,
  })
  .meta({ id: 'IncomingWebhook' });

export const createdIncomingWebhookSchema = incomingWebhookSchema
  .extend({
    token: z.string().describe('the secret token; shown only in this response'),
    url: z.string().describe('PUBLIC_URL/webhooks/runs/<token>: POST a JSON object to it to start a run'),
  })
  .meta({ id: 'CreatedIncomingWebhook' });

export const createIncomingWebhookBody = z
  .strictObject({
    deployment_id: z.string().min(1, 'must not be empty'),
    environment: environmentSchema.default('production'),
    name: name.optional(),
  })
  .meta({ examples: [{ deployment_id: 'dep_01jd3x9k2m4n5p6q7r8s9t0v1w', name: 'github-push' }] });

export const idParams = z.object({ id: z.string() });
export const deliveryParams = z.object({ id: z.string(), delivery_id: z.string() });
export const tokenParams = z.object({ token: z.string() });

export const listByDeploymentQuery = z.strictObject({
  deployment_id: z.string().min(1).optional().describe('only those of this deployment'),
  ...paginationQuery(50),
});
export const deliveriesQuery = z.strictObject(paginationQuery(50));

export type CreateWebhookInput = z.output<typeof createWebhookBody>;
export type UpdateWebhookInput = z.output<typeof updateWebhookBody>;
export type CreateIncomingWebhookInput = z.output<typeof createIncomingWebhookBody>;
