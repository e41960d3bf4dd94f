import type { Command } from 'commander';
import { ApiError, type StreamEvent, unwrap } from '../client/index.js';
import { type Api, CliError } from './api.js';
import type { CliContext } from './context.js';
import { resolveDeployment } from './deployments.js';

/** The deployment a version belongs to: the one named, or the one of the admin key's deployments that has it. */
async function deploymentOf(api: Api, versionId: string, named?: string): Promise<string> {
  if (named) return resolveDeployment(api, named, false);
  for (let offset = 0; ; offset += 1000) {
    const query = { limit: 1000, offset };
    const { deployments } = await unwrap(api.client.GET('/v1/deployments', { params: { query } }));
    for (const deployment of deployments) {
      const path = { id: deployment.id, version_id: versionId };
      try {
        await unwrap(api.client.GET('/v1/deployments/{id}/versions/{version_id}', { params: { path } }));
        return deployment.id;
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 404)) throw error;
      }
    }
    if (deployments.length < 1000) throw new CliError(`No version ${versionId} in any deployment of this key`);
  }
}

/** `crewd builds log`: a version's build log again, from its first line (CONTRACTS §8). */
export function buildsCommands(program: Command, { api, io, setExitCode }: CliContext) {
  const builds = program.command('builds').description('Builds of bundle versions');
  builds
    .command('log')
    .description("A version's build log; with --follow, a build still running is followed to its end")
    .argument('<version>', 'the version id (ver_…)')
    .option('--deployment <name|id>', 'its deployment (found from the version otherwise)')
    .option('--follow', 'follow a build still running')
    .option('--json', 'the log events as JSON lines')
    .action(async (versionId: string, options: { deployment?: string; follow?: boolean; json?: boolean }) => {
      const deploymentId = await deploymentOf(api(), versionId, options.deployment);
      const path = { id: deploymentId, version_id: versionId };
      const version = await unwrap(
        api().client.GET('/v1/deployments/{id}/versions/{version_id}', { params: { path } }),
      );
      if (version.status === 'building' && !options.follow) {
        io.err(`Version ${versionId} is still building: add --follow to follow its log to the end`);
        return;
      }
      const url = `/v1/deployments/${deploymentId}/versions/${versionId}/build/events`;
      const onEvent = (event: StreamEvent) => {
        const line = event.data.data as { message?: string } | undefined;
        if (options.json) io.out(JSON.stringify(event.data));
        else if (event.data.type === 'build.log') io.out(line?.message ?? '');
      };
      // From the first line: a finished build's stream asked without a resume point has only its end (SPEC §6).
      const complete = await api().follow(url, onEvent, { lastEventId: 0 });
      const status = String(complete.data.status);
      io.err(status === 'ready' ? 'Build ready' : `Build ${status}: ${complete.data.error ?? 'no reason given'}`);
      setExitCode(status === 'ready' ? 0 : 1);
    });
}
