import { type Command, Option } from 'commander';
import { ApiError, type Schemas, unwrap } from '../client/index.js';
import { type Api, CliError } from './api.js';
import type { CliContext } from './context.js';
import { resolveDeployment } from './deployments.js';
import { interruptsOf, printInterrupts } from './interrupts.js';
import { jsonObjectOption } from './json-option.js';
import { explainNoRunningVersion } from './no-running-version.js';
import type { Io } from './output.js';
import { tail } from './runs.js';

const STRATEGIES = ['reject', 'enqueue', 'interrupt', 'rollback'] as const;

interface RunOptions {
  input?: string;
  thread?: string;
  command?: string;
  multitaskStrategy?: (typeof STRATEGIES)[number];
  environment?: 'production' | 'staging';
  follow: boolean;
  json: boolean;
}

type Started = Schemas['CreatedRun'] | Schemas['CreatedThreadRun'];

/** `crewd run`: starts a run (in a thread, through the thread's route), and follows it when asked. */
async function run(api: Api, io: Io, deployment: string, options: RunOptions): Promise<number> {
  const input = jsonObjectOption('--input', options.input);
  if (!options.thread && (options.command || options.multitaskStrategy)) {
    throw new CliError('--command and --multitask-strategy are for runs in a thread: add --thread <id>');
  }
  const started = options.thread
    ? await startThreadRun(api, deployment, options.thread, input, options)
    : await startRun(api, deployment, input, options);
  if (!options.follow) {
    io.out(JSON.stringify(started));
    return 0;
  }
  io.err(`Run ${started.run_id} ${started.status} (version ${started.version_number}${waiting(started, options)})`);
  const following = { json: options.json, toStderr: !options.json, deployment };
  const { exitCode, complete } = await tail(api, io, started.run_id, following);
  if (!options.json) io.out(JSON.stringify(complete.data.output ?? null));
  const interrupts = interruptsOf(complete.data.output);
  if (options.thread && interrupts.length > 0) printInterrupts(io, deployment, options.thread, interrupts);
  return exitCode;
}

async function startRun(api: Api, deployment: string, input: Record<string, unknown>, options: RunOptions) {
  const deploymentId = await resolveDeployment(api, deployment, false);
  try {
    return await unwrap(
      api.client.POST('/v1/runs', { body: { deployment_id: deploymentId, input, ...environment(options) } }),
    );
  } catch (error) {
    throw await explainNoRunningVersion(api, error, deployment, deploymentId);
  }
}

async function startThreadRun(
  api: Api,
  deployment: string,
  threadId: string,
  input: Record<string, unknown>,
  options: RunOptions,
): Promise<Started> {
  const path = { id: threadId };
  const thread = await unwrap(api.client.GET('/v1/threads/{id}', { params: { path } }));
  if (thread.deployment_id !== deployment && thread.deployment_id !== (await resolveDeployment(api, deployment, false)))
    throw new CliError(`Thread ${threadId} belongs to deployment ${thread.deployment_id}, not ${deployment}`);
  const body = {
    input,
    ...environment(options),
    ...(options.command ? { command: jsonObjectOption('--command', options.command) } : {}),
    ...(options.multitaskStrategy ? { multitask_strategy: options.multitaskStrategy } : {}),
  };
  try {
    return await unwrap(api.client.POST('/v1/threads/{id}/runs', { params: { path }, body }));
  } catch (error) {
    if (error instanceof ApiError && error.status === 409 && !options.multitaskStrategy) {
      throw new CliError(
        `${error.message}: wait for it to end, or add --multitask-strategy enqueue|interrupt|rollback`,
      );
    }
    throw await explainNoRunningVersion(api, error, deployment, thread.deployment_id);
  }
}

/** Why a run just started is `pending`. */
function waiting(started: Started, options: RunOptions): string {
  if (started.status !== 'pending') return '';
  if (options.multitaskStrategy === 'enqueue') return ', queued behind the thread’s current run';
  if (options.multitaskStrategy) return ', starts once the run it interrupted has stopped';
  return ', waiting for a free slot';
}

const environment = (options: RunOptions) => (options.environment ? { environment: options.environment } : {});

/** `crewd run <deployment> …`. */
export function runCommand(program: Command, { api, io, setExitCode }: CliContext) {
  program
    .command('run')
    .description('Start a run of a deployment’s running version')
    .argument('<deployment>', 'deployment name or id')
    .option('--input <json|@file>', 'the run input: a JSON object, or @file.json')
    .option('--thread <id>', 'run in this thread')
    .option('--command <json|@file>', 'resume an interrupted thread: {"resume": …, "update": {…}} (with --thread)')
    .addOption(
      new Option('--multitask-strategy <strategy>', 'when the thread is busy (with --thread; default reject)').choices(
        STRATEGIES,
      ),
    )
    .addOption(new Option('--environment <environment>').choices(['production', 'staging']))
    .option('--follow', 'follow its events (stderr) and print its output (stdout)', false)
    .option('--json', 'with --follow: the events as JSON lines on stdout', false)
    .action(async (deployment: string, options: RunOptions) => {
      setExitCode(await run(api(), io, deployment, options));
    });
}
