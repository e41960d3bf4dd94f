import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAdmin } from '../auth/plugin.js';
import { forbidden } from '../errors.js';
import { commonErrors, conflictError } from '../http/error-schema.js';
import { DEFAULT_ORG_ID } from './bootstrap.js';
import {
  apiKeySchema,
  createApiKeyBody,
  createdApiKeySchema,
  createdOrganizationSchema,
  createOrganizationBody,
  idParams,
  listQuery,
  organizationSchema,
} from './schemas.js';
import type { AccessService } from './service.js';

/** Organizations and API keys: management routes, admin keys only. */
export const accessRoutes: FastifyPluginAsyncZod<{ access: AccessService }> = async (app, { access }) => {
  const requireDefaultOrgAdmin = (request: Parameters<typeof requireAdmin>[0]) => {
    const principal = requireAdmin(request, 'Managing organizations');
    if (principal.orgId !== DEFAULT_ORG_ID) {
      throw forbidden('Managing organizations requires an admin API key of organization default');
    }
  };

  app.post(
    '/organizations',
    {
      schema: {
        tags: ['organizations'],
        operationId: 'createOrganization',
        summary: 'Create an organization with its first admin key',
        description:
          'Admin keys of organization `default` only. The answer holds the new organization’s first admin key, shown only here. ' +
          '409 while runners run without isolation (RUNNER_SANDBOX=auto without bubblewrap) unless RUNNER_SANDBOX=off was set.',
        body: createOrganizationBody,
        response: { 201: createdOrganizationSchema, ...commonErrors, ...conflictError },
      },
    },
    async (request, reply) => {
      requireDefaultOrgAdmin(request);
      return reply.status(201).send(await access.createOrganization(request.body.name));
    },
  );

  app.get(
    '/organizations',
    {
      schema: {
        tags: ['organizations'],
        operationId: 'listOrganizations',
        summary: 'List organizations',
        description: 'Admin keys of organization `default` only.',
        querystring: listQuery,
        response: { 200: z.object({ organizations: z.array(organizationSchema) }), ...commonErrors },
      },
    },
    async (request) => {
      requireDefaultOrgAdmin(request);
      return { organizations: await access.listOrganizations(request.query) };
    },
  );

  app.post(
    '/api-keys',
    {
      schema: {
        tags: ['api-keys'],
        operationId: 'createApiKey',
        summary: 'Create an API key in the caller’s organization',
        description: 'Admin keys only. `role` is `member` unless given; the secret `key` appears only in this answer.',
        body: createApiKeyBody,
        response: { 201: createdApiKeySchema, ...commonErrors },
      },
    },
    async (request, reply) => {
      const principal = requireAdmin(request, 'Managing API keys');
      return reply.status(201).send(await access.createApiKey(principal.orgId, request.body.name, request.body.role));
    },
  );

  app.get(
    '/api-keys',
    {
      schema: {
        tags: ['api-keys'],
        operationId: 'listApiKeys',
        summary: 'List API keys (without secrets)',
        description: 'Admin keys only. Secrets are never returned.',
        response: { 200: z.object({ api_keys: z.array(apiKeySchema) }), ...commonErrors },
      },
    },
    async (request) => {
      const principal = requireAdmin(request, 'Managing API keys');
      return { api_keys: await access.listApiKeys(principal.orgId) };
    },
  );

  app.delete(
    '/api-keys/:id',
    {
      schema: {
        tags: ['api-keys'],
        operationId: 'deleteApiKey',
        summary: 'Revoke an API key; it is refused from the next request on',
        description: 'Admin keys only. The key answers 401 from the next request on.',
        params: idParams,
        response: { 200: z.object({ success: z.literal(true) }), ...commonErrors },
      },
    },
    async (request) => {
      const principal = requireAdmin(request, 'Managing API keys');
      await access.deleteApiKey(principal.orgId, request.params.id);
      return { success: true as const };
    },
  );
};
