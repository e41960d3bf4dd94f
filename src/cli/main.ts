import { Command, CommanderError, Option } from 'commander';
import { ApiError, unwrap } from '../client/index.js';
import { adminKeyCommand } from './admin-key.js';
import { type Api, apiErrorMessage, CliError, createApi } from './api.js';
import { buildsCommands } from './builds.js';
import type { CliContext } from './context.js';
import { loadCredentials, removeCredentials, saveCredentials } from './credentials.js';
import { cronsCommands } from './crons.js';
import { deploy } from './deploy.js';
import { type Io, processIo } from './output.js';
import { packageVersion } from './package-version.js';
import { runCommand } from './run.js';
import { runsCommands } from './runs.js';
import { threadsCommands } from './threads.js';
import { variablesCommands } from './variables.js';
import { deploymentsCommand, versionsCommands } from './versions.js';

/** The `crewd` command: answers its exit code (0 success, 1 the run or build failed, 2 usage or connection). */
export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  io: Io = processIo,
): Promise<number> {
  let exitCode = 0;
  let connected: Api | undefined;
  const context: CliContext = {
    api: () => {
      if (connected) return connected;
      const { url, key } = loadCredentials(env);
      connected = createApi(url, key);
      return connected;
    },
    io,
    setExitCode: (code) => {
      exitCode = code;
    },
  };
  const program = new Command('crewd')
    .description('Deploy crews to crewd and run them')
    .version(packageVersion(), '--version', "print crewd's version")
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out(text.trimEnd()), writeErr: (text) => io.err(text.trimEnd()) });
  loginCommand(program, env, io);
  logoutCommand(program, env, io);
  adminKeyCommand(program, env, io);
  serveCommand(program, env);
  deployCommand(program, context);
  runCommand(program, context);
  runsCommands(program, context);
  threadsCommands(program, context);
  cronsCommands(program, context);
  variablesCommands(program, context);
  deploymentsCommand(program, context);
  versionsCommands(program, context);
  buildsCommands(program, context);

  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    // --help and --version end here too, successfully.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof ApiError) io.err(`crewd: ${apiErrorMessage(error)}`);
    else io.err(`crewd: ${(error as Error).message}`);
    return error instanceof CliError ? error.exitCode : 2;
  }
}

function serveCommand(program: Command, env: NodeJS.ProcessEnv) {
  program
    .command('serve')
    .description('Start the service, with the same settings as `npm start` (environment variables, see the README)')
    .action(async () => {
      // Loaded only here: the other commands need none of the service.
      const { serve } = await import('../service/serve.js');
      await serve(env);
    });
}

function logoutCommand(program: Command, env: NodeJS.ProcessEnv, io: Io) {
  program
    .command('logout')
    .description('Forget the URL and key `crewd login` saved')
    .action(() => {
      const { file, removed } = removeCredentials(env);
      io.err(removed ? `Logged out: removed ${file}` : `Not logged in (no ${file})`);
    });
}

function loginCommand(program: Command, env: NodeJS.ProcessEnv, io: Io) {
  program
    .command('login')
    .description('Save the URL and API key of a crewd service (a file only you can read)')
    .requiredOption('--url <url>', 'the service, e.g. http://localhost:8080')
    .requiredOption('--key <key>', 'an API key (crewd_…)')
    .action(async (options: { url: string; key: string }) => {
      if (!/^https?:\/\//.test(options.url)) throw new CliError('--url must start with http:// or https://');
      const { client } = createApi(options.url, options.key);
      await unwrap(client.GET('/v1/runs', { params: { query: { limit: 1 } } }));
      const file = saveCredentials(env, { url: options.url, key: options.key });
      io.err(`Logged in to ${options.url}; saved in ${file}`);
    });
}

function deployCommand(program: Command, { api, io, setExitCode }: CliContext) {
  program
    .command('deploy')
    .description('Pack a project folder, upload it as a new version and follow its build')
    .argument('[dir]', 'the project folder', '.')
    .requiredOption('--deployment <name|id>', 'the deployment (created when no deployment has that name)')
    .addOption(new Option('--environment <environment>', 'run it there once built').choices(['production', 'staging']))
    .option('--no-wait', 'print the version id and return without following the build')
    .action(
      async (dir: string, options: { deployment: string; environment?: 'production' | 'staging'; wait: boolean }) => {
        setExitCode(await deploy(api(), io, dir, options));
      },
    );
}
