import path from 'node:path';
import { type Api, CliError } from './http.js';
import type { Io } from './output.js';
import { packProject } from './pack.js';

/** The deployment named (or with that id); created when no deployment has that name. */
export async function resolveDeployment(api: Api, nameOrId: string, create: boolean): Promise<string> {
  if (nameOrId.startsWith('dep_')) {
    try {
      return (await api.request('GET', `/v1/deployments/${encodeURIComponent(nameOrId)}`)).id;
    } catch (error) {
      if ((error as { status?: number }).status !== 404) throw error;
    }
  }
  for (let offset = 0; ; offset += 1000) {
    const { deployments } = await api.request('GET', `/v1/deployments?limit=1000&offset=${offset}`);
    const found = (deployments as Array<{ id: string; name: string }>).find((d) => d.name === nameOrId);
    if (found) return found.id;
    if (deployments.length < 1000) break;
  }
  if (!create)
    throw new CliError(`No deployment named ${nameOrId}: deploy it first (crewd deploy --deployment ${nameOrId})`);
  return (await api.request('POST', '/v1/deployments', { json: { name: nameOrId } })).id;
}

export interface DeployOptions {
  deployment: string;
  environment?: 'production' | 'staging';
  wait: boolean;
}

/**
 * CONTRACTS §8: packs DIR, uploads it as a new version, follows the build log on stderr, prints
 * the version id on stdout; 0 when ready, 1 when its build failed.
 */
export async function deploy(api: Api, io: Io, dir: string, options: DeployOptions): Promise<number> {
  const folder = path.resolve(dir);
  const bundle = await packProject(folder);
  io.err(`Packed ${folder} (${(bundle.length / 1024).toFixed(1)} KiB)`);
  const deploymentId = await resolveDeployment(api, options.deployment, true);
  const query = options.environment ? `?environment=${options.environment}` : '';
  const version = await api.request('POST', `/v1/deployments/${deploymentId}/versions${query}`, {
    body: bundle,
    contentType: 'application/gzip',
  });
  io.err(`Version ${version.number} (${version.id}) of ${options.deployment} is building`);
  if (!options.wait) {
    io.out(version.id);
    return 0;
  }
  const complete = await api.follow(`/v1/deployments/${deploymentId}/versions/${version.id}/build/events`, (event) => {
    if (event.data?.type === 'build.log') io.err(`  ${event.data.data?.message ?? ''}`);
  });
  io.out(version.id);
  if (complete.data.status === 'ready') {
    io.err(
      options.environment
        ? `Ready: version ${version.number} now runs in ${options.environment}`
        : `Ready: promote it with PUT /v1/deployments/${deploymentId}/environments/<environment>`,
    );
    return 0;
  }
  io.err(`Build failed: ${complete.data.error ?? 'no reason given'}`);
  return 1;
}
