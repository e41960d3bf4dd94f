import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAdmin } from '../auth/plugin.js';
import { badRequest } from '../errors.js';
import { commonErrors, conflictError } from '../http/error-schema.js';
import {
  type BundleVersionQuery,
  bundleBody,
  bundleVersionQuery,
  type CreateVersionInput,
  createDeploymentBody,
  createVersionBody,
  deploymentParams,
  deploymentSchema,
  environmentParams,
  listQuery,
  promoteBody,
  putVariablesBody,
  updateDeploymentBody,
  variableNamesSchema,
  versionParams,
  versionSchema,
} from './schemas.js';
import type { DeploymentService, toVersion } from './service.js';
import type { VariableService } from './variables.js';

const NEED = 'Managing deployments';

type Version = ReturnType<typeof toVersion>;

/** What these routes ask of the build service (src/builds, which stands above deployments). */
export interface VersionBuilds {
  /** Takes a bundle: a `building` version, built in the background. */
  upload(orgId: string, deploymentId: string, data: Buffer, query: BundleVersionQuery): Promise<Version>;
  /** A version was deleted: its built files go. */
  forget(versionId: string): Promise<void>;
}

/** Deployments, their versions and which version each environment runs: admin keys only. */
export const deploymentRoutes: FastifyPluginAsyncZod<{
  deployments: DeploymentService;
  builds: VersionBuilds;
  variables: VariableService;
  maxBundleBytes: number;
}> = async (app, { deployments, builds, variables, maxBundleBytes }) => {
  const tags = ['deployments'];
  app.addContentTypeParser(
    'application/gzip',
    { parseAs: 'buffer', bodyLimit: maxBundleBytes },
    (_request, body, done) => done(null, body),
  );

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
      const { name, ...options } = request.body;
      return reply.status(201).send(await deployments.create(orgId, name, options));
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

  app.patch(
    '/deployments/:id',
    {
      schema: {
        tags,
        operationId: 'updateDeployment',
        summary: 'Change a deployment’s name, description or MCP switch',
        description: 'Admin keys only. `mcp: false` takes the deployment off /mcp’s tools (docs/mcp.md).',
        params: deploymentParams,
        body: updateDeploymentBody,
        response: { 200: deploymentSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return deployments.update(orgId, request.params.id, request.body);
    },
  );

  app.post(
    '/deployments/:id/versions',
    {
      // Before the body is read: a member's upload is refused without taking in its megabytes.
      onRequest: async (request) => {
        requireAdmin(request, NEED);
      },
      schema: {
        tags,
        operationId: 'createVersion',
        summary: 'Create a version: a command (JSON), or a project bundle (a gzipped tar) that crewd builds',
        description:
          'Admin keys only. `number` counts 1, 2, 3… per deployment; `env` values are secrets and never returned ' +
          '(only `env_keys`). With `Content-Type: application/gzip` the body is a gzipped tar of the project; the ' +
          'version is `building` until its build ends (`ready` or `failed`); `environment` in the query promotes it once ready.',
        params: deploymentParams,
        querystring: bundleVersionQuery,
        body: {
          content: {
            'application/json': { schema: createVersionBody },
            'application/gzip': { schema: bundleBody },
          },
        } as unknown as typeof createVersionBody,
        response: { 201: versionSchema, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { orgId } = requireAdmin(request, NEED);
      const body: unknown = request.body;
      if (Buffer.isBuffer(body)) {
        return reply.status(201).send(await builds.upload(orgId, request.params.id, body, request.query));
      }
      if (request.query.environment !== undefined || request.query.timeout_seconds !== undefined) {
        throw badRequest('environment and timeout_seconds go in the JSON body of a command version');
      }
      const input = body as CreateVersionInput;
      return reply.status(201).send(await deployments.createVersion(orgId, request.params.id, input));
    },
  );

  app.get(
    '/deployments/:id/versions/:version_id',
    {
      schema: {
        tags,
        operationId: 'getVersion',
        summary: 'Get a version, with its build status',
        description: 'Admin keys only. `status` is `building`, `ready` or `failed` (with `build_error`).',
        params: versionParams,
        response: { 200: versionSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return deployments.getVersion(orgId, request.params.id, request.params.version_id);
    },
  );

  app.delete(
    '/deployments/:id/versions/:version_id',
    {
      schema: {
        tags,
        operationId: 'deleteVersion',
        summary: 'Delete a version with its runs, bundle, built files and build log',
        description:
          'Admin keys only. Refused (409) while it is an environment’s running version or has a pending or running run.',
        params: versionParams,
        response: { 200: z.object({ success: z.literal(true) }), ...commonErrors, ...conflictError },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      await deployments.deleteVersion(orgId, request.params.id, request.params.version_id);
      await builds.forget(request.params.version_id);
      return { success: true as const };
    },
  );

  app.put(
    '/deployments/:id/variables',
    {
      schema: {
        tags,
        operationId: 'putVariables',
        summary: 'Set or remove (null) deployment variables, the crew’s secrets',
        description: 'Admin keys only. Runners get them, then the version’s env over them. Values are never returned.',
        params: deploymentParams,
        body: putVariablesBody,
        response: { 200: variableNamesSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return variables.put(orgId, request.params.id, request.body.variables);
    },
  );

  app.get(
    '/deployments/:id/variables',
    {
      schema: {
        tags,
        operationId: 'listVariables',
        summary: 'List the names of the deployment variables',
        description: 'Admin keys only. Names only: values are never returned.',
        params: deploymentParams,
        response: { 200: variableNamesSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = requireAdmin(request, NEED);
      return variables.list(orgId, request.params.id);
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
        description: 'Admin keys only. The version must belong to the deployment and be `ready` (409 otherwise).',
        params: environmentParams,
        body: promoteBody,
        response: { 200: deploymentSchema, ...commonErrors, ...conflictError },
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
