import { readFileSync } from 'node:fs';
import { resolveDeployment } from './deploy.js';
import { type Api, CliError, type StreamEvent } from './http.js';
import { humanLine, type Io, runEnd } from './output.js';

/** `--input '{"a":1}'` or `--input @file.json`: a JSON object. */
export function parseInput(value: string | undefined): Record<string, unknown> {
  if (value === undefined) return {};
  let text = value;
  if (value.startsWith('@')) {
    try {
      text = readFileSync(value.slice(1), 'utf8');
    } catch (error) {
      throw new CliError(`--input ${value}: cannot read the file (${(error as Error).message})`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CliError(`--input: not valid JSON; give a JSON object such as '{"topic": "AI"}' or @file.json`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new CliError('--input: must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/** Follows a run's events to its end: human lines (or JSON lines) on `write`; the exit code of its end. */
export async function tail(api: Api, io: Io, runId: string, options: { json: boolean; toStderr?: boolean }) {
  const write = options.toStderr ? io.err : io.out;
  const complete = await api.follow(
    `/v1/runs/${encodeURIComponent(runId)}/events`,
    (event: StreamEvent) => write(options.json ? JSON.stringify(event.data) : humanLine(event)),
    { lastEventId: 0 },
  );
  if (options.json) write(JSON.stringify(complete.data));
  const end = runEnd(complete);
  if (!options.json) io.err(end.line);
  return { exitCode: end.exitCode, complete };
}

export async function startRun(
  api: Api,
  io: Io,
  deployment: string,
  options: { input?: string; thread?: string; follow: boolean; environment?: string; json: boolean },
): Promise<number> {
  const input = parseInput(options.input);
  const deploymentId = await resolveDeployment(api, deployment, false);
  const body: Record<string, unknown> = { deployment_id: deploymentId, input };
  if (options.thread) body.thread_id = options.thread;
  if (options.environment) body.environment = options.environment;
  const run = await api.request('POST', '/v1/runs', { json: body });
  if (!options.follow) {
    io.out(JSON.stringify(run));
    return 0;
  }
  io.err(`Run ${run.run_id} ${run.status} (version ${run.version_number})`);
  const { exitCode, complete } = await tail(api, io, run.run_id, { json: options.json, toStderr: !options.json });
  if (!options.json) io.out(JSON.stringify(complete.data.output ?? null));
  return exitCode;
}

export async function listRuns(api: Api, io: Io, options: { deployment?: string; status?: string; limit: string }) {
  const query = new URLSearchParams({ limit: options.limit });
  if (options.deployment) query.set('deployment_id', await resolveDeployment(api, options.deployment, false));
  if (options.status) query.set('status', options.status);
  const { runs } = await api.request('GET', `/v1/runs?${query}`);
  for (const run of runs as Array<Record<string, string>>) {
    io.out([run.id, run.status, run.deployment_id, run.created_at].join('\t'));
  }
  return 0;
}
