import { type Command, Option } from 'commander';
import { unwrap } from '../client/index.js';
import type { CliContext } from './context.js';
import { resolveDeployment } from './deployments.js';
import { printInterrupts } from './interrupts.js';
import { jsonObjectOption, limitOption } from './json-option.js';
import { writeRows } from './output.js';

const THREAD_STATUSES = ['idle', 'busy', 'interrupted', 'error'] as const;

interface ThreadListOptions {
  status?: (typeof THREAD_STATUSES)[number];
  limit: number;
  json?: boolean;
}

/** `crewd threads create|list|get|delete`: a thread's status, values and what it waits for. */
export function threadsCommands(program: Command, { api, io }: CliContext) {
  const threads = program.command('threads').description('Create, list and read threads (their status and interrupts)');
  threads
    .command('create')
    .description('Create a thread of a deployment; prints it as JSON (its thread_id)')
    .argument('<deployment>', 'deployment name or id')
    .option('--values <json|@file>', 'its initial values')
    .option('--metadata <json|@file>', 'metadata of your own')
    .action(async (deployment: string, options: { values?: string; metadata?: string }) => {
      const body = {
        deployment_id: await resolveDeployment(api(), deployment, false),
        metadata: jsonObjectOption('--metadata', options.metadata),
        ...(options.values ? { values: jsonObjectOption('--values', options.values) } : {}),
      };
      io.out(JSON.stringify(await unwrap(api().client.POST('/v1/threads', { body }))));
    });
  threads
    .command('list')
    .description('A deployment’s threads, newest first: thread_id, status, updated_at')
    .argument('<deployment>', 'deployment name or id')
    .addOption(new Option('--status <status>').choices(THREAD_STATUSES))
    .option('--limit <n>', 'at most this many (1 to 1000)', limitOption, 20)
    .option('--json', 'print the answer as JSON')
    .action(async (deployment: string, options: ThreadListOptions) => {
      const { json, ...filters } = options;
      const query = { deployment_id: await resolveDeployment(api(), deployment, false), ...filters };
      const { threads: found } = await unwrap(api().client.GET('/v1/threads', { params: { query } }));
      if (json) return io.out(JSON.stringify({ threads: found }));
      writeRows(
        io,
        found.map((thread) => [thread.thread_id, thread.status, thread.updated_at]),
      );
    });
  threads
    .command('get')
    .description('A thread as JSON; when it is interrupted, what it waits for and how to resume it (stderr)')
    .argument('<thread id>')
    .action(async (threadId: string) => {
      const thread = await unwrap(api().client.GET('/v1/threads/{id}', { params: { path: { id: threadId } } }));
      io.out(JSON.stringify(thread, null, 2));
      // A thread without a deployment (made through the LangGraph API, no run yet) cannot be interrupted.
      if (thread.status === 'interrupted' && thread.deployment_id)
        printInterrupts(io, thread.deployment_id, thread.thread_id, thread.interrupts);
    });
  threads
    .command('delete')
    .description('Delete a thread and its history (refused while a run goes on in it)')
    .argument('<thread id>')
    .action(async (threadId: string) => {
      await unwrap(api().client.DELETE('/v1/threads/{id}', { params: { path: { id: threadId } } }));
      io.err(`Deleted thread ${threadId}`);
    });
}
