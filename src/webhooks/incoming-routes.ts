import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAdmin } from '../auth/plugin.js';
import { commonErrors, conflictError, errorBodySchema } from '../http/error-schema.js';
import { createdRunSchema, idempotencyHeaders } from '../runs/schemas.js';
import type { IncomingWebhookService } from './incoming-service.js';
import {
  createdIncomingWebhookSchema,
  createIncomingWebhookBody,
  idParams,
  incomingWebhookSchema,
  listByDeploymentQuery,
  tokenParams,
} from './schemas.js';

const NEED = 'Managing incoming webhooks';

/** Incoming webhooks (token URLs that start runs): management, admin keys only. Under /v1. */
export const incomingWebhookRoutes: FastifyPluginAsyncZod<{ incoming: IncomingWebhookService }> = async (
  app,
  { incoming },
) => {
  const tags = ['incoming webhooks'];

  app.post(
    '/incoming-webhooks',
    {
      schema: {
        tags,
        operationId: 'createIncomingWebhook',
        summary: 'Create an incoming webhook; its token and URL are shown only in this response',
        description: 'Admin keys only. Posting a JSON object to the URL starts a run with it as input.',
        body: createIncomingWebhookBody,
        response: { 201: createdIncomingWebhookSchema, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { orgId } = requireAdmin(request, NEED);
      return reply.status(201).send(await incoming.create(orgId, request.body));
    },
  );

  app.get(
    '/incoming-webhooks',
    {
      schema: {
        tags,
        operationId: 'listIncomingWebhooks',
        summary: 'List incoming webhooks, newest first (without tokens)',
        description: 'Admin keys only; `deployment_id` narrows the list.',
        querystring: listByDeploymentQuery,
        response: { 200: z.object({ incoming_webhooks: z.array(incomingWebhookSchema) }), ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return { incoming_webhooks: await incoming.list(orgId, request.query) };
    },
  );

  app.get(
    '/incoming-webhooks/:id',
    {
      schema: {
        tags,
        operationId: 'getIncomingWebhook',
        summary: 'Get an incoming webhook (without its token)',
        description: 'Admin keys only.',
        params: idParams,
        response: { 200: incomingWebhookSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return incoming.get(orgId, request.params.id);
    },
  );

  app.delete(
    '/incoming-webhooks/:id',
    {
      schema: {
        tags,
        operationId: 'deleteIncomingWebhook',
        summary: 'Delete an incoming webhook; its URL answers 404 from then on',
        description: 'Admin keys only.',
        params: idParams,
        response: { 200: z.object({ success: z.literal(true) }), ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      await incoming.remove(orgId, request.params.id);
      return { success: true as const };
    },
  );
};

/** `POST /webhooks/runs/<token>`: outside /v1, no API key; the token in the path is the credential. */
export const incomingTriggerRoutes: FastifyPluginAsyncZod<{ incoming: IncomingWebhookService }> = async (
  app,
  { incoming },
) => {
  app.post(
    '/webhooks/runs/:token',
    {
      schema: {
        tags: ['incoming webhooks'],
        operationId: 'triggerIncomingWebhook',
        summary: 'Start a run of the webhook’s deployment and environment; the JSON object body is the input',
        description:
          'No Authorization header: the token picks the deployment and environment. Answers 202 once the runner ' +
          'process has started. Honours Idempotency-Key.',
        security: [],
        params: tokenParams,
        headers: idempotencyHeaders,
        body: z.unknown().describe('a JSON object: the run input'),
        response: {
          202: createdRunSchema,
          400: errorBodySchema,
          404: errorBodySchema,
          ...conflictError,
          413: errorBodySchema,
          429: errorBodySchema,
          500: errorBodySchema,
          503: errorBodySchema,
        },
      },
    },
    async (request, reply) => {
      const key = request.headers['idempotency-key'] ?? null;
      // A POST without any body starts the run with `{}`; a JSON `null` is a body, and refused.
      const bodyless =
        request.headers['transfer-encoding'] === undefined && Number(request.headers['content-length'] ?? 0) === 0;
      const body = bodyless ? undefined : request.body;
      return reply.status(202).send(await incoming.trigger(request.params.token, body, key));
    },
  );
};
