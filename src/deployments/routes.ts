import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAdmin } from '../auth/plugin.js';
import { commonErrors } from '../http/error-schema.js';
import {
  createDeploymentBody,
  createVersionBody,
  deploymentParams,
  deploymentSchema,
  environmentParams,
  listQuery,
  promoteBody,
  versionSchema,
} from './schemas.js';
import type { DeploymentService } from './service.js';

const NEED = 'Managing deployments';

/** Deployments, their versions and which version each environment runs: admin keys only. */
export const deploymentRoutes: FastifyPluginAsyncZod<{ deployments: DeploymentService }> = async (
  app,
  { deployments },
) => {
  const tags = ['deployments'];

  app.post(
    '/deployments',
    {
      schema: {
        tags,
        operationId: 'createDeployment',
        summary: 'Create a deployment',
        description: 'Admin keys only. A new deployment has no running version in either environment.',
        body: createDeploymentBody,
        response: { 201: deploymentSchema, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { orgId } = requireAdmin(request, NEED);
      return reply.status(201).send(await deployments.create(orgId, request.body.name));
    },
  );

  app.get(
    '/deployments',
    {
      schema: {
        tags,
        operationId: 'listDeployments',
        summary: 'List deployments, newest first',
        description: 'Admin keys only.',
        querystring: listQuery,
        response: { 200: z.object({ deployments: z.array(deploymentSchema) }), ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return { deployments: await deployments.list(orgId, request.query) };
    },
  );

  app.get(
    '/deployments/:id',
    {
      schema: {
        tags,
        operationId: 'getDeployment',
        summary: 'Get a deployment',
        description: 'Admin keys only. `environments` names the running version of production and staging.',
        params: deploymentParams,
        response: { 200: deploymentSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return deployments.get(orgId, request.params.id);
    },
  );

  app.post(
    '/deployments/:id/versions',
    {
      schema: {
        tags,
        operationId: 'createVersion',
        summary: 'Create a version (the runner command); optionally make it an environment’s running version',
        description:
          'Admin keys only. `number` counts 1, 2, 3… per deployment; `env` values are secrets and never returned (only `env_keys`).',
        params: deploymentParams,
        body: createVersionBody,
        response: { 201: versionSchema, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { orgId } = requireAdmin(request, NEED);
      return reply.status(201).send(await deployments.createVersion(orgId, request.params.id, request.body));
    },
  );

  app.get(
    '/deployments/:id/versions',
    {
      schema: {
        tags,
        operationId: 'listVersions',
        summary: 'List a deployment’s versions, newest first',
        description: 'Admin keys only.',
        params: deploymentParams,
        querystring: listQuery,
        response: { 200: z.object({ versions: z.array(versionSchema) }), ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return { versions: await deployments.listVersions(orgId, request.params.id, request.query) };
    },
  );

  app.put(
    '/deployments/:id/environments/:environment',
    {
      schema: {
        tags,
        operationId: 'setEnvironment',
        summary: 'Set the running version of an environment (promote or roll back)',
        description: 'Admin keys only. The version must belong to the deployment.',
        params: environmentParams,
        body: promoteBody,
        response: { 200: deploymentSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      const { id, environment } = request.params;
      return deployments.setEnvironment(orgId, id, environment, request.body.version_id);
    },
  );

  app.delete(
    '/deployments/:id/environments/:environment',
    {
      schema: {
        tags,
        operationId: 'clearEnvironment',
        summary: 'Leave an environment without a running version',
        description: 'Admin keys only. Runs of that environment answer 400 until a version is set again.',
        params: environmentParams,
        response: { 200: deploymentSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      const { id, environment } = request.params;
      return deployments.setEnvironment(orgId, id, environment, null);
    },
  );
};
