import { type Command, Option } from 'commander';
import { unwrap } from '../client/index.js';
import type { CliContext } from './context.js';
import { resolveDeployment } from './deployments.js';
import { jsonObjectOption, limitOption } from './json-option.js';
import { writeRows } from './output.js';

const STRATEGIES = ['reject', 'enqueue', 'interrupt', 'rollback'] as const;

interface CreateOptions {
  schedule: string;
  timezone?: string;
  input?: string;
  environment?: 'production' | 'staging';
  thread?: string;
  multitaskStrategy?: (typeof STRATEGIES)[number];
  disabled: boolean;
}

/** `crewd crons list|create|delete` (CONTRACTS §11). */
export function cronsCommands(program: Command, { api, io }: CliContext) {
  const crons = program.command('crons').description('Runs started on a schedule');
  crons
    .command('list')
    .description('Crons: id, schedule, timezone, deployment, enabled, next_run_at, last_run_id, last_error')
    .option('--deployment <name|id>')
    .option('--limit <n>', 'at most this many (1 to 1000)', limitOption, 50)
    .option('--json', 'print the answer as JSON')
    .action(async (options: { deployment?: string; limit: number; json?: boolean }) => {
      const query = {
        limit: options.limit,
        ...(options.deployment ? { deployment_id: await resolveDeployment(api(), options.deployment, false) } : {}),
      };
      const { crons: found } = await unwrap(api().client.GET('/v1/crons', { params: { query } }));
      if (options.json) return io.out(JSON.stringify({ crons: found }));
      writeRows(
        io,
        found.map((cron) => [
          cron.id,
          cron.schedule,
          cron.timezone,
          cron.deployment_id,
          cron.enabled ? 'enabled' : 'disabled',
          cron.next_run_at,
          cron.last_run_id,
          cron.last_error,
        ]),
      );
    });
  crons
    .command('create')
    .description('Start a run of a deployment on a schedule; prints the cron as JSON')
    .argument('<deployment>', 'deployment name or id')
    .requiredOption('--schedule <cron>', 'e.g. "0 9 * * 1-5" (5 fields), or 6 with seconds first')
    .option('--timezone <zone>', 'IANA time zone the schedule is read in (default UTC)')
    .option('--input <json|@file>', 'the input of every run: a JSON object, or @file.json')
    .addOption(new Option('--environment <environment>').choices(['production', 'staging']))
    .option('--thread <id>', 'start each run in this thread')
    .addOption(
      new Option('--multitask-strategy <strategy>', 'when the thread is busy (default enqueue)').choices(STRATEGIES),
    )
    .option('--disabled', 'create it switched off', false)
    .action(async (deployment: string, options: CreateOptions) => {
      const body = {
        deployment_id: await resolveDeployment(api(), deployment, false),
        schedule: options.schedule,
        input: jsonObjectOption('--input', options.input),
        enabled: !options.disabled,
        ...(options.timezone ? { timezone: options.timezone } : {}),
        ...(options.environment ? { environment: options.environment } : {}),
        ...(options.thread ? { thread_id: options.thread } : {}),
        ...(options.multitaskStrategy ? { multitask_strategy: options.multitaskStrategy } : {}),
      };
      const cron = await unwrap(api().client.POST('/v1/crons', { body }));
      io.out(JSON.stringify(cron));
      io.err(cron.enabled ? `Cron ${cron.id}: next run at ${cron.next_run_at}` : `Cron ${cron.id} created, disabled`);
    });
  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    crons
      .command(name)
      .description(enabled ? 'Start its runs again, counting the next from now' : 'Stop starting its runs (kept)')
      .argument('<cron id>')
      .option('--json', 'print the cron as JSON')
      .action(async (cronId: string, options: { json?: boolean }) => {
        const params = { path: { id: cronId } };
        const cron = await unwrap(api().client.PATCH('/v1/crons/{id}', { params, body: { enabled } }));
        if (options.json) return io.out(JSON.stringify(cron));
        io.err(enabled ? `Cron ${cron.id} enabled: next run at ${cron.next_run_at}` : `Cron ${cron.id} disabled`);
      });
  }
  crons
    .command('delete')
    .argument('<cron id>')
    .action(async (cronId: string) => {
      await unwrap(api().client.DELETE('/v1/crons/{id}', { params: { path: { id: cronId } } }));
      io.err(`Deleted cron ${cronId}`);
    });
}
