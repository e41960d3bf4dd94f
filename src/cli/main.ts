import { Command, CommanderError, Option } from 'commander';
import { loadCredentials, saveCredentials } from './credentials.js';
import { deploy } from './deploy.js';
import { type Api, CliError, createApi } from './http.js';
import { type Io, processIo } from './output.js';
import { listRuns, startRun, tail } from './runs.js';

/** The `crewd` command: answers its exit code (0 success, 1 the run or build failed, 2 usage or connection). */
export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  io: Io = processIo,
): Promise<number> {
  let exitCode = 0;
  const api = (): Api => {
    const { url, key } = loadCredentials(env);
    return createApi(url, key);
  };
  const program = new Command('crewd')
    .description('Deploy crews to crewd and run them')
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out(text.trimEnd()), writeErr: (text) => io.err(text.trimEnd()) });

  program
    .command('login')
    .description('Save the URL and API key of a crewd service (a file only you can read)')
    .requiredOption('--url <url>', 'the service, e.g. http://localhost:8080')
    .requiredOption('--key <key>', 'an API key (crewd_…)')
    .action(async (options: { url: string; key: string }) => {
      if (!/^https?:\/\//.test(options.url)) throw new CliError('--url must start with http:// or https://');
      await createApi(options.url, options.key).request('GET', '/v1/runs?limit=1');
      const file = saveCredentials(env, { url: options.url, key: options.key });
      io.err(`Logged in to ${options.url}; saved in ${file}`);
    });

  program
    .command('deploy')
    .description('Pack a project folder, upload it as a new version and follow its build')
    .argument('[dir]', 'the project folder', '.')
    .requiredOption('--deployment <name|id>', 'the deployment (created when no deployment has that name)')
    .addOption(new Option('--environment <environment>', 'run it there once built').choices(['production', 'staging']))
    .option('--no-wait', 'print the version id and return without following the build')
    .action(
      async (dir: string, options: { deployment: string; environment?: 'production' | 'staging'; wait: boolean }) => {
        exitCode = await deploy(api(), io, dir, options);
      },
    );

  program
    .command('run')
    .description('Start a run of a deployment’s running version')
    .argument('<deployment>', 'deployment name or id')
    .option('--input <json|@file>', 'the run input: a JSON object, or @file.json')
    .option('--thread <id>', 'run in this thread')
    .addOption(new Option('--environment <environment>').choices(['production', 'staging']))
    .option('--follow', 'follow its events (stderr) and print its output (stdout)', false)
    .option('--json', 'with --follow: the events as JSON lines on stdout', false)
    .action(async (deployment: string, options) => {
      exitCode = await startRun(api(), io, deployment, options);
    });

  const runs = program.command('runs').description('List, read, cancel and follow runs');
  runs
    .command('list')
    .option('--deployment <name|id>')
    .option('--status <status>')
    .option('--limit <n>', 'at most this many', '20')
    .action(async (options) => {
      exitCode = await listRuns(api(), io, options);
    });
  runs
    .command('get')
    .argument('<run id>')
    .action(async (runId: string) => {
      io.out(JSON.stringify(await api().request('GET', `/v1/runs/${encodeURIComponent(runId)}`), null, 2));
    });
  runs
    .command('cancel')
    .argument('<run id>')
    .action(async (runId: string) => {
      io.out(JSON.stringify(await api().request('POST', `/v1/runs/${encodeURIComponent(runId)}/cancel`)));
    });
  runs
    .command('tail')
    .description('Follow a run’s events live until it ends (reconnecting with Last-Event-ID)')
    .argument('<run id>')
    .option('--json', 'JSON lines instead of readable lines', false)
    .action(async (runId: string, options: { json: boolean }) => {
      exitCode = (await tail(api(), io, runId, options)).exitCode;
    });

  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here too, successfully.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof CliError) {
      io.err(`crewd: ${error.message}`);
      return error.exitCode;
    }
    io.err(`crewd: ${(error as Error).message}`);
    return 2;
  }
}
