import path from 'node:path';
import { uploadBundle } from '../client/index.js';
import { AppError } from '../errors.js';
import { type Api, CliError } from './api.js';
import { resolveDeployment } from './deployments.js';
import type { Io } from './output.js';
import { packProject } from './pack.js';

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
  const bundle = await pack(io, folder);
  const deploymentId = await resolveDeployment(api, options.deployment, true);
  const query = options.environment ? { environment: options.environment } : {};
  const version = await uploadBundle(api.client, deploymentId, bundle, query);
  io.err(`Version ${version.number} (${version.id}) of ${options.deployment} is building`);
  if (!options.wait) {
    io.out(version.id);
    return 0;
  }
  const complete = await api.follow(`/v1/deployments/${deploymentId}/versions/${version.id}/build/events`, (event) => {
    const line = event.data.data as { message?: string } | undefined;
    if (event.data.type === 'build.log') io.err(`  ${line?.message ?? ''}`);
  });
  io.out(version.id);
  if (complete.data.status === 'ready') {
    io.err(
      options.environment
        ? `Ready: version ${version.number} now runs in ${options.environment}`
        : `Ready: run it in production with \`crewd promote ${options.deployment} ${version.number}\` (or --environment staging)`,
    );
    return 0;
  }
  io.err(`Build failed: ${complete.data.error ?? 'no reason given'}`);
  return 1;
}

/**
 * Packs the folder, saying which likely secrets it left out, and recognises the project as the service will, so
 * that a bundle the service would refuse is refused before a deployment is created for it.
 */
async function pack(io: Io, folder: string): Promise<Buffer> {
  const secrets: string[] = [];
  const bundle = await packProject(folder, { onSecretLeftOut: (relative) => secrets.push(relative) });
  io.err(`Packed ${folder} (${(bundle.length / 1024).toFixed(1)} KiB)`);
  if (secrets.length > 0) {
    io.err(`Left out as likely secrets: ${secrets.join(', ')}`);
    io.err(
      '  (give their values as deployment variables: crewd variables set <deployment> --from .env; ' +
        'to upload one anyway, add !<its name> to .crewdignore)',
    );
  }
  // Loaded only here: the project checks' schemas would slow every other command's start.
  const [{ detectProject }, { inspectBundle }] = await Promise.all([
    import('../builds/project.js'),
    import('../builds/unpack.js'),
  ]);
  try {
    detectProject(await inspectBundle(bundle));
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    throw new CliError(`${folder} cannot be deployed: ${error.message}. Nothing was created`);
  }
  return bundle;
}
