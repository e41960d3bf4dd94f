import { z } from 'zod';
import { isoDate, paginationQuery } from '../http/pagination.js';

const role = z.enum(['admin', 'member']);

export const apiKeySchema = z
  .object({ id: z.string(), name: z.string(), role, created_at: isoDate })
  .meta({ id: 'ApiKey' });

export const createdApiKeySchema = apiKeySchema
  .extend({ key: z.string().describe('the secret; shown only in this response') })
  .meta({ id: 'CreatedApiKey' });

export const createApiKeyBody = z
  .strictObject({
    name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
    role: role.default('member'),
  })
  .meta({ examples: [{ name: 'ci-deployer', role: 'member' }] });

export const organizationSchema = z
  .object({ id: z.string(), name: z.string(), created_at: isoDate })
  .meta({ id: 'Organization' });

export const createdOrganizationSchema = organizationSchema
  .extend({
    api_key: z.object({ id: z.string(), name: z.string(), role, key: z.string() }),
  })
  .meta({ id: 'CreatedOrganization' });

export const createOrganizationBody = z
  .strictObject({
    name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  })
  .meta({ examples: [{ name: 'acme' }] });

export const listQuery = z.strictObject(paginationQuery(50));

export const idParams = z.object({ id: z.string() });
