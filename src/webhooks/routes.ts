import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAdmin } from '../auth/plugin.js';
import { commonErrors } from '../http/error-schema.js';
import {
  createdWebhookSchema,
  createWebhookBody,
  deliveriesQuery,
  deliveryDetailSchema,
  deliveryParams,
  deliverySchema,
  idParams,
  listByDeploymentQuery,
  redeliverSchema,
  secretSchema,
  updateWebhookBody,
  webhookSchema,
} from './schemas.js';
import type { WebhookService } from './service.js';

const NEED = 'Managing webhooks';
const success = z.object({ success: z.literal(true) });

/** Outgoing webhooks, their delivery log, redelivery and secret regeneration: admin keys only. */
export const webhookRoutes: FastifyPluginAsyncZod<{ webhooks: WebhookService }> = async (app, { webhooks }) => {
  const tags = ['webhooks'];

  app.post(
    '/webhooks',
    {
      schema: {
        tags,
        operationId: 'createWebhook',
        summary: 'Create an outgoing webhook; the signing secret is shown only in this response',
        description: 'Admin keys only. Deliveries are signed with the secret (HMAC-SHA256) and retried on failure.',
        body: createWebhookBody,
        response: { 201: createdWebhookSchema, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { orgId } = requireAdmin(request, NEED);
      return reply.status(201).send(await webhooks.create(orgId, request.body));
    },
  );

  app.get(
    '/webhooks',
    {
      schema: {
        tags,
        operationId: 'listWebhooks',
        summary: 'List outgoing webhooks, newest first',
        description: 'Admin keys only; `deployment_id` narrows the list.',
        querystring: listByDeploymentQuery,
        response: { 200: z.object({ webhooks: z.array(webhookSchema) }), ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return { webhooks: await webhooks.list(orgId, request.query) };
    },
  );

  app.get(
    '/webhooks/:id',
    {
      schema: {
        tags,
        operationId: 'getWebhook',
        summary: 'Get an outgoing webhook',
        description: 'Admin keys only. The secret is never returned here.',
        params: idParams,
        response: { 200: webhookSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return webhooks.get(orgId, request.params.id);
    },
  );

  app.patch(
    '/webhooks/:id',
    {
      schema: {
        tags,
        operationId: 'updateWebhook',
        summary: 'Change an outgoing webhook (name, url, events, environment, enabled)',
        description: 'Admin keys only. Fields left out keep their values.',
        params: idParams,
        body: updateWebhookBody,
        response: { 200: webhookSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return webhooks.update(orgId, request.params.id, request.body);
    },
  );

  app.delete(
    '/webhooks/:id',
    {
      schema: {
        tags,
        operationId: 'deleteWebhook',
        summary: 'Delete an outgoing webhook and its delivery log',
        description: 'Admin keys only.',
        params: idParams,
        response: { 200: success, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      await webhooks.remove(orgId, request.params.id);
      return { success: true as const };
    },
  );

  app.post(
    '/webhooks/:id/secret',
    {
      schema: {
        tags,
        operationId: 'regenerateWebhookSecret',
        summary: 'Regenerate the signing secret; the old one stops signing at once',
        description: 'Admin keys only. The new secret appears only in this answer.',
        params: idParams,
        response: { 200: secretSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return webhooks.regenerateSecret(orgId, request.params.id);
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      schema: {
        tags,
        operationId: 'listWebhookDeliveries',
        summary: 'List a webhook’s deliveries, newest first',
        description: 'Admin keys only. Each delivery with its status, attempts and last answer.',
        params: idParams,
        querystring: deliveriesQuery,
        response: { 200: z.object({ deliveries: z.array(deliverySchema) }), ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return { deliveries: await webhooks.listDeliveries(orgId, request.params.id, request.query) };
    },
  );

  app.get(
    '/webhooks/:id/deliveries/:delivery_id',
    {
      schema: {
        tags,
        operationId: 'getWebhookDelivery',
        summary: 'Get one delivery with its body and every attempt',
        description: 'Admin keys only.',
        params: deliveryParams,
        response: { 200: deliveryDetailSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return webhooks.getDelivery(orgId, request.params.id, request.params.delivery_id);
    },
  );

  app.post(
    '/webhooks/:id/deliveries/:delivery_id/redeliver',
    {
      schema: {
        tags,
        operationId: 'redeliverWebhookDelivery',
        summary: 'Send a delivery again now (same delivery id and body, fresh retry schedule)',
        description: 'Admin keys only. Answers 202; the attempt happens in the background.',
        params: deliveryParams,
        response: { 202: redeliverSchema, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { orgId } = requireAdmin(request, NEED);
      return reply.status(202).send(await webhooks.redeliver(orgId, request.params.id, request.params.delivery_id));
    },
  );
};
