import type { Client } from 'openapi-fetch';
import { apiError } from './errors.js';
import type { components, operations, paths } from './schema.js';

type UploadQuery = NonNullable<operations['createVersion']['parameters']['query']>;

/**
 * Uploads a gzipped tar of a project as a new bundle version (`Content-Type: application/gzip`, CONTRACTS §8).
 * Answers the Version, `building`; throws ApiError (400 for a bundle it refuses, 413 when too large).
 */
export async function uploadBundle(
  client: Client<paths>,
  deploymentId: string,
  bundle: Uint8Array | Blob,
  query: UploadQuery = {},
): Promise<components['schemas']['DeploymentVersion']> {
  const { data, error, response } = await client.POST('/v1/deployments/{id}/versions', {
    params: { path: { id: deploymentId }, query },
    body: bundle,
    headers: { 'content-type': 'application/gzip' },
    // The bytes go as they are: openapi-fetch would otherwise send them as JSON.
    bodySerializer: (body) => body,
  });
  if (error !== undefined || data === undefined) throw apiError(error, response);
  return data;
}
