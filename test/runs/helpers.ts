import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { SseParser } from '../../src/client/sse.js';
import type { RunTimings } from '../../src/compose.js';
import { ADMIN_KEY, startTestApp, type TestContext } from '../helpers/app.js';
import type { TestDatabase } from '../helpers/database.js';
import { pollPause, until } from '../helpers/poll.js';

export const CREWS = path.resolve(import.meta.dirname, '../../examples/crews');
export const crew = (file: string) => [process.execPath, path.join(CREWS, file)];

/** Short intervals so tests of keepalives, fallbacks and kills finish quickly. */
export const FAST_TIMINGS: Partial<RunTimings> = { keepaliveMs: 200, pollMs: 100, killGraceMs: 300, leaseTickMs: 200 };

export type RunContext = TestContext;

/** The app on a fresh database, listening on a real port (streams need real sockets). */
export const createRunContext = (
  env: Record<string, string> = {},
  timings: Partial<RunTimings> = FAST_TIMINGS,
  database?: TestDatabase,
): Promise<RunContext> => startTestApp({ env, timings, listen: true, ...(database ? { database } : {}) });

export async function deploy(
  ctx: Pick<RunContext, 'call'>,
  command: string[],
  options: { env?: Record<string, string>; timeout_seconds?: number; cwd?: string; key?: string } = {},
): Promise<{ deploymentId: string; versionId: string }> {
  const created = await ctx.call('POST', '/v1/deployments', { body: { name: 'crew' }, key: options.key });
  if (created.statusCode !== 201) throw new Error(`deployment: ${created.body}`);
  const deploymentId = created.json().id as string;
  const { key: _key, ...version } = options;
  const versioned = await ctx.call('POST', `/v1/deployments/${deploymentId}/versions`, {
    body: { command, environment: 'production', ...version },
    key: options.key,
  });
  if (versioned.statusCode !== 201) throw new Error(`version: ${versioned.body}`);
  return { deploymentId, versionId: versioned.json().id };
}

export async function startRun(
  ctx: Pick<RunContext, 'call'>,
  deploymentId: string,
  input: Record<string, unknown> = {},
  key?: string,
): Promise<{ run_id: string; status: string; version_id: string; version_number: number }> {
  const response = await ctx.call('POST', '/v1/runs', { body: { deployment_id: deploymentId, input }, key });
  if (response.statusCode !== 202) throw new Error(`run: ${response.statusCode} ${response.body}`);
  return response.json();
}

const TERMINAL = ['succeeded', 'failed', 'canceled'];

/** Polls the run until it is terminal (or in one of `statuses`); fails after `timeoutMs`. */
export async function waitForRun(
  ctx: Pick<RunContext, 'call'>,
  runId: string,
  statuses: string[] = TERMINAL,
  timeoutMs = 20_000,
  key?: string,
) {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    const response = await ctx.call('GET', `/v1/runs/${runId}`, { key });
    const run = response.json();
    if (statuses.includes(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
    await pollPause(attempt);
  }
}

export { until };

export interface SseMessage {
  id?: string;
  data?: unknown;
  comment?: string;
}

/** Reads an SSE response over a real socket until the server closes it (or `stopWhen` says so). */
export async function readStream(
  url: string,
  options: { headers?: Record<string, string>; stopWhen?: (message: SseMessage, all: SseMessage[]) => boolean } = {},
): Promise<{ status: number; contentType: string | null; messages: SseMessage[]; body: string }> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...options.headers },
    signal: controller.signal,
  });
  const messages: SseMessage[] = [];
  let body = '';
  if (!response.body) return { status: response.status, contentType: null, messages, body };
  const decoder = new TextDecoder();
  let stopped = false;
  const parser = new SseParser((parsed) => {
    if (stopped) return;
    const message: SseMessage = {};
    if (parsed.comments) message.comment = parsed.comments.join('\n');
    if (parsed.id !== undefined) message.id = parsed.id;
    if (parsed.data !== undefined) message.data = JSON.parse(parsed.data);
    messages.push(message);
    stopped = options.stopWhen?.(message, messages) ?? false;
  });
  try {
    for await (const chunk of response.body) {
      const text = decoder.decode(chunk as Uint8Array, { stream: true });
      body += text;
      parser.push(text);
      if (stopped) {
        controller.abort();
        break;
      }
    }
  } catch {
    // Aborted by stopWhen, or the server dropped the connection: what arrived is the answer.
  }
  return { status: response.status, contentType: response.headers.get('content-type'), messages, body };
}

/** The `data` objects of a stream, keepalive comments left out. */
export const dataOf = (messages: SseMessage[]) =>
  messages.filter((message) => message.data !== undefined).map((message) => message.data as Record<string, unknown>);

export function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  // A zombie waiting for its parent to reap it has exited all the same.
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/** Processes whose command line holds `marker`. */
export function processesWith(marker: string): string[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    });
}

/**
 * Host pids of the live processes started for a run: the runner and its children, which carry the
 * run's CREWD_RUN_ID (in the sandbox, bwrap starts with an empty environment and is not among them);
 * a pid a runner reports about itself is only meaningful inside its own PID namespace.
 */
export function runProcesses(runId: string): number[] {
  const marker = `\0CREWD_RUN_ID=${runId}\0`;
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (`\0${readFileSync(`/proc/${entry}/environ`, 'latin1')}`.includes(marker)) pids.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids.filter((pid) => !processGone(pid));
}
