import type { Command } from 'commander';
import { unwrap } from '../client/index.js';
import { CliError } from './api.js';
import type { CliContext } from './context.js';
import { resolveDeployment } from './deployments.js';
import { parseAssignments, readDotEnv } from './dotenv.js';

/** `crewd variables set|unset|list`: a deployment's variables (CONTRACTS §8); values are never printed. */
export function variablesCommands(program: Command, { api, io }: CliContext) {
  const variables = program.command('variables').description("A deployment's variables (an LLM key, say)");
  const put = async (deployment: string, values: Record<string, string | null>, json: boolean) => {
    const id = await resolveDeployment(api(), deployment, false);
    const path = { id };
    const { names } = await unwrap(
      api().client.PUT('/v1/deployments/{id}/variables', { params: { path }, body: { variables: values } }),
    );
    if (json) io.out(JSON.stringify({ names }));
    else io.err(`Variables of ${deployment} now: ${names.length > 0 ? names.join(', ') : '(none)'}`);
  };
  variables
    .command('set')
    .description('Set variables from NAME=value arguments and/or a .env file; the next runs get them')
    .argument('<deployment>', 'name or id')
    .argument('[assignments...]', 'NAME=value')
    .option('--from <file>', 'a .env file of NAME=value lines')
    .option('--json', 'print {"names": [...]} on standard output')
    .action(async (deployment: string, assignments: string[], options: { from?: string; json?: boolean }) => {
      const values = { ...(options.from ? readDotEnv(options.from) : {}), ...parseAssignments(assignments) };
      if (Object.keys(values).length === 0) throw new CliError('give NAME=value arguments or --from <.env file>');
      await put(deployment, values, options.json === true);
    });
  variables
    .command('unset')
    .description('Remove variables')
    .argument('<deployment>', 'name or id')
    .argument('<names...>', 'variable names')
    .option('--json', 'print {"names": [...]} on standard output')
    .action(async (deployment: string, names: string[], options: { json?: boolean }) => {
      await put(deployment, Object.fromEntries(names.map((name) => [name, null])), options.json === true);
    });
  variables
    .command('list')
    .description('The names of the variables (values are never shown)')
    .argument('<deployment>', 'name or id')
    .option('--json', 'print {"names": [...]}')
    .action(async (deployment: string, options: { json?: boolean }) => {
      const path = { id: await resolveDeployment(api(), deployment, false) };
      const { names } = await unwrap(api().client.GET('/v1/deployments/{id}/variables', { params: { path } }));
      if (options.json) io.out(JSON.stringify({ names }));
      else for (const name of names) io.out(name);
    });
}
