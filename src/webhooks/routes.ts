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
        summary: 'Create an outgoing webhook; the signing secret is shown only in this response',
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
        summary: 'List outgoing webhooks, newest first',
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
        summary: 'Get an outgoing webhook',
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
        summary: 'Change an outgoing webhook (name, url, events, environment, enabled)',
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
        summary: 'Delete an outgoing webhook and its delivery log',
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
        summary: 'Regenerate the signing secret; the old one stops signing at once',
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
        summary: 'List a webhook’s deliveries, newest first',
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
        summary: 'Get one delivery with its body and every attempt',
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
        summary: 'Send a delivery again now (same delivery id and body, fresh retry schedule)',
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
