import { z } from 'zod';
import { isoDate, paginationQuery } from '../http/pagination.js';

export const environmentSchema = z.enum(['production', 'staging']);

const runningVersion = z.object({ version_id: z.string(), version_number: z.number().int() }).nullable();

export const deploymentSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable().describe('what the deployment does; its MCP tool’s description'),
    mcp: z.boolean().describe('whether the deployment is a tool at /mcp (docs/mcp.md)'),
    environments: z.object({ production: runningVersion, staging: runningVersion }),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .meta({ id: 'Deployment' });

export const versionSchema = z
  .object({
    id: z.string(),
    deployment_id: z.string(),
    number: z.number().int(),
    command: z.array(z.string()),
    cwd: z.string().nullable(),
    env_keys: z.array(z.string()).describe('names of the environment variables; values are secrets and never returned'),
    timeout_seconds: z.number().nullable(),
    source: z.enum(['command', 'bundle']).describe('a command on the service’s machine, or an uploaded project'),
    status: z.enum(['building', 'ready', 'failed']).describe('command versions are ready at once'),
    build_error: z.string().nullable().describe('the failing build step and its last output lines'),
    runtime: z.enum(['python', 'node']).nullable(),
    entrypoint: z.record(z.string(), z.unknown()).nullable().describe('what the bundle declares'),
    bundle: z.object({ sha256: z.string(), size: z.number().int() }).nullable(),
    created_at: isoDate,
  })
  .meta({ id: 'DeploymentVersion' });

const name = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');

const description = z.string().trim().max(2000, 'must be at most 2000 characters').nullable();
const mcp = z.boolean({ message: 'must be true or false' });

export const createDeploymentBody = z
  .strictObject({
    name,
    description: description.optional().describe('what it does; shown to MCP clients'),
    mcp: mcp.optional().describe('a tool at /mcp once it has a production version; default true'),
  })
  .meta({ examples: [{ name: 'research-crew', description: 'Researches a topic and writes a report' }] });

export const updateDeploymentBody = z
  .strictObject({ name: name.optional(), description: description.optional(), mcp: mcp.optional() })
  .refine((body) => Object.keys(body).length > 0, 'must change at least one of name, description, mcp')
  .meta({ examples: [{ mcp: false }] });

export const createVersionBody = z
  .strictObject({
    command: z
      .array(z.string().min(1, 'must not contain empty strings'), { message: 'must be an array of strings' })
      .min(1, 'must name the program to run')
      .describe('argv of the runner; started without a shell'),
    cwd: z
      .string()
      .refine((value) => value.startsWith('/'), 'must be an absolute path')
      .optional()
      .describe('working folder; default a fresh folder DATA_DIR/runs/<run_id>'),
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'keys must be environment variable names'), z.string())
      .default({}),
    timeout_seconds: z.number().positive('must be positive').max(604800, 'must be at most 604800 (7 days)').optional(),
    environment: environmentSchema.optional().describe('make this version the running version of that environment'),
  })
  .meta({
    examples: [
      {
        command: ['python3', '/srv/crews/research/main.py'],
        env: { OPENAI_MODEL: 'gpt-4o-mini' },
        timeout_seconds: 600,
        environment: 'production',
      },
    ],
  });

export const promoteBody = z
  .strictObject({ version_id: z.string().min(1) })
  .meta({ examples: [{ version_id: 'ver_01jd3x9k2m4n5p6q7r8s9t0v1w' }] });

export const bundleVersionQuery = z.strictObject({
  environment: environmentSchema
    .optional()
    .describe('becomes that environment’s running version once the build succeeds, never before'),
  timeout_seconds: z.coerce
    .number({ message: 'must be a number' })
    .positive('must be positive')
    .max(604800, 'must be at most 604800 (7 days)')
    .optional(),
});

/** The gzipped tar of a project, as the request body. */
export const bundleBody = z
  .custom<Buffer>((value) => Buffer.isBuffer(value), 'must be a gzipped tar')
  .describe('a gzipped tar of the project folder');

export const versionParams = z.object({ id: z.string(), version_id: z.string() });

const VARIABLE_NAME = /^[A-Z_][A-Z0-9_]*$/;
export const putVariablesBody = z.strictObject({
  variables: z
    .record(z.string(), z.string().nullable())
    .superRefine((value, ctx) => {
      const names = Object.keys(value);
      if (names.length > 100) ctx.addIssue({ code: 'custom', message: 'at most 100 variables at once' });
      for (const name of names.filter((name) => !VARIABLE_NAME.test(name))) {
        ctx.addIssue({ code: 'custom', path: [name], message: 'names must match ^[A-Z_][A-Z0-9_]*$' });
      }
    })
    .describe('NAME → value, or null to remove it'),
});
export const variableNamesSchema = z
  .object({ names: z.array(z.string()).describe('names only: values are never returned') })
  .meta({ id: 'DeploymentVariableNames' });

export const deploymentParams = z.object({ id: z.string() });
export const environmentParams = z.object({ id: z.string(), environment: environmentSchema });
export const listQuery = z.strictObject(paginationQuery(50));

export type CreateVersionInput = z.output<typeof createVersionBody>;
export type BundleVersionQuery = z.output<typeof bundleVersionQuery>;
export type EnvironmentName = z.output<typeof environmentSchema>;
