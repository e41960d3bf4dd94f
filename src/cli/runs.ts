import { type Command, Option } from 'commander';
import { unwrap } from '../client/index.js';
import type { Api } from './api.js';
import type { CliContext } from './context.js';
import { resolveDeployment } from './deployments.js';
import { printRunInterrupts } from './interrupts.js';
import { limitOption } from './json-option.js';
import { humanLine, type Io, runEnd, writeRows } from './output.js';

/** Follows a run's events to its end: human lines (or JSON lines) on `write`; the exit code of its end. */
export async function tail(
  api: Api,
  io: Io,
  runId: string,
  options: { json: boolean; toStderr?: boolean; deployment?: string },
) {
  const write = options.toStderr ? io.err : io.out;
  const complete = await api.follow(
    `/v1/runs/${encodeURIComponent(runId)}/events`,
    (event) => write(options.json ? JSON.stringify(event.data) : humanLine(event)),
    { lastEventId: 0 },
  );
  if (options.json) write(JSON.stringify(complete.data));
  const end = runEnd(complete, options.deployment);
  if (!options.json) io.err(end.line);
  return { exitCode: end.exitCode, complete };
}

const RUN_STATUSES = ['pending', 'running', 'succeeded', 'failed', 'canceled'] as const;

interface ListOptions {
  deployment?: string;
  thread?: string;
  cron?: string;
  status?: (typeof RUN_STATUSES)[number];
  limit: number;
  json?: boolean;
}

async function listRuns(api: Api, io: Io, options: ListOptions) {
  const query = {
    limit: options.limit,
    ...(options.deployment ? { deployment_id: await resolveDeployment(api, options.deployment, false) } : {}),
    ...(options.thread ? { thread_id: options.thread } : {}),
    ...(options.cron ? { cron_id: options.cron } : {}),
    ...(options.status ? { status: options.status } : {}),
  };
  const { runs } = await unwrap(api.client.GET('/v1/runs', { params: { query } }));
  if (options.json) return io.out(JSON.stringify({ runs }));
  writeRows(
    io,
    runs.map((run) => [run.id, run.status, run.deployment_id, run.created_at]),
  );
}

/** `crewd runs list|get|cancel|tail`. */
export function runsCommands(program: Command, { api, io, setExitCode }: CliContext) {
  const runs = program.command('runs').description('List, read, cancel and follow runs');
  const path = (id: string) => ({ params: { path: { id } } });
  runs
    .command('list')
    .description('Runs, newest first: id, status, deployment, created_at')
    .option('--deployment <name|id>')
    .option('--thread <id>', 'runs of this thread')
    .option('--cron <id>', 'runs this cron started')
    .addOption(new Option('--status <status>').choices(RUN_STATUSES))
    .option('--limit <n>', 'at most this many (1 to 1000)', limitOption, 20)
    .option('--json', 'print the answer as JSON')
    .action(async (options: ListOptions) => listRuns(api(), io, options));
  runs
    .command('get')
    .argument('<run id>')
    .action(async (runId: string) => {
      io.out(JSON.stringify(await unwrap(api().client.GET('/v1/runs/{id}', path(runId))), null, 2));
    });
  runs
    .command('cancel')
    .argument('<run id>')
    .action(async (runId: string) => {
      io.out(JSON.stringify(await unwrap(api().client.POST('/v1/runs/{id}/cancel', path(runId)))));
    });
  runs
    .command('tail')
    .description('Follow a run’s events live until it ends (reconnecting with Last-Event-ID)')
    .argument('<run id>')
    .option('--json', 'JSON lines instead of readable lines', false)
    .action(async (runId: string, options: { json: boolean }) => {
      const { exitCode, complete } = await tail(api(), io, runId, options);
      await printRunInterrupts(api(), io, runId, complete.data.output);
      setExitCode(exitCode);
    });
}
