import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../auth/plugin.js';
import { AppError } from '../errors.js';
import type { RunEnd } from '../events/types.js';
import type { RunService } from '../runs/service.js';
import type { RunStreams } from '../streams/streams.js';
import type { ThreadService } from '../threads/service.js';
import { followRun, type RunEvent } from './follow.js';
import { argumentsProblem } from './input-check.js';
import type { DeploymentTool } from './tools.js';

export interface CallDeps {
  runs: RunService;
  threads: ThreadService;
  streams: RunStreams;
  /** How long a call waits for its run before answering with the run's id (MCP_CALL_WAIT_SECONDS). */
  waitMs: number;
}

export interface ToolCall {
  principal: Principal;
  tool: DeploymentTool;
  args: Record<string, unknown>;
  /** Told of each run event (progress notifications), with its number from 1. */
  progress: ((count: number, event: RunEvent) => void) | null;
  /** Aborted when the client cancels the call. */
  signal: AbortSignal;
  /** Told the run's id once it exists, before any progress. */
  started: (runId: string) => void;
}

const errorResult = (text: string, meta: Record<string, unknown> = {}): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text }],
  ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}),
});

/** The thread and the run's input or resume command, from the call's arguments. */
function runArguments(args: Record<string, unknown>) {
  const { thread_id: threadId, resume, ...input } = args;
  if (threadId !== undefined && typeof threadId !== 'string') throw new TypeError('thread_id must be a string');
  if (resume !== undefined && threadId === undefined) {
    throw new TypeError('resume needs the thread_id of the interrupted call');
  }
  return { threadId: threadId ?? null, command: resume === undefined ? null : { resume }, input };
}

/** A question of an interrupt, as text: its `question` when it has one, else its value as JSON. */
function question(interrupt: unknown): string {
  const value = (interrupt as { value?: unknown } | null)?.value;
  const asked = (value as { question?: unknown } | null)?.question;
  if (typeof asked === 'string') return asked;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A finished run as the tool's result: its output, its error, or the interrupt's question. */
export function endResult(end: RunEnd, runId: string, threadId: string | null): CallToolResult {
  const meta = { 'crewd/run_id': runId, ...(threadId ? { 'crewd/thread_id': threadId } : {}) };
  if (end.status === 'failed') return errorResult(end.error ?? 'The run failed', meta);
  if (end.status === 'canceled') return errorResult('The run was canceled', meta);
  const output = end.output ?? {};
  const interrupts = output.interrupts;
  if (Array.isArray(interrupts) && threadId) {
    const asked = interrupts.map(question).join('\n');
    const text = `${asked}\n\nThe run waits for an answer: call this tool again with {"thread_id": "${threadId}", "resume": <your answer>}.`;
    return {
      content: [{ type: 'text', text }],
      structuredContent: { interrupts, thread_id: threadId },
      _meta: meta,
    };
  }
  return { content: [{ type: 'text', text: JSON.stringify(output) }], structuredContent: output, _meta: meta };
}

/**
 * A run that outlasts the wait. Its structured content is there for a tool with an output schema: the official
 * clients refuse a result without one (tools.ts STILL_RUNNING is the schema's branch for it).
 */
function stillRunning(runId: string, threadId: string | null, waitMs: number): CallToolResult {
  const seconds = Math.round(waitMs / 100) / 10;
  const thread = threadId ? { thread_id: threadId } : {};
  return {
    structuredContent: { status: 'running', run_id: runId, ...thread },
    content: [
      {
        type: 'text',
        text: `Run ${runId} is still running after ${seconds} s and goes on; its output will be at GET /v1/runs/${runId}.`,
      },
    ],
    _meta: { 'crewd/run_id': runId, 'crewd/status': 'running', ...(threadId ? { 'crewd/thread_id': threadId } : {}) },
  };
}

/** A run that exists but could not be followed to its end: what the store says of it now. */
async function readEnd(deps: CallDeps, orgId: string, runId: string): Promise<RunEnd | null> {
  const run = JSON.parse(await deps.runs.getJson(orgId, runId)) as RunEnd & { error_message: string | null };
  if (run.status !== 'succeeded' && run.status !== 'failed' && run.status !== 'canceled') return null;
  return { status: run.status, output: run.output, error: run.error_message };
}

/**
 * tools/call: starts a run of the tool's deployment with the arguments as input (a graph's in a thread of its own,
 * unless the call names one) and waits for its end, at most `waitMs`; the run goes on past that.
 */
export async function callTool(deps: CallDeps, call: ToolCall): Promise<CallToolResult> {
  const { principal, tool } = call;
  const problem = argumentsProblem(tool.tool.name, tool.tool.inputSchema, call.args);
  if (problem) return errorResult(problem);
  let parsed: ReturnType<typeof runArguments>;
  try {
    parsed = runArguments(call.args);
  } catch (error) {
    return errorResult((error as Error).message);
  }
  let created: { run_id: string };
  let threadId = parsed.threadId;
  try {
    if (!threadId && tool.graph) {
      const thread = await deps.threads.create(principal.orgId, {
        deployment_id: tool.deploymentId,
        metadata: { created_by: 'mcp' },
        values: null,
      });
      threadId = thread.thread_id;
    }
    created = await deps.runs.createRun({
      orgId: principal.orgId,
      deploymentId: tool.deploymentId,
      environment: 'production',
      input: parsed.input,
      threadId,
      command: parsed.command,
      idempotencyScope: 'mcp',
    });
  } catch (error) {
    // Why the run could not start (a busy or unknown thread, no production version) is the caller's to fix.
    if (error instanceof AppError && error.statusCode < 500) return errorResult(error.message);
    throw error;
  }
  const runId = created.run_id;
  call.started(runId);
  let count = 0;
  const following = followRun(deps.streams, principal, runId, (event) => call.progress?.(++count, event));
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<'waited'>((resolve) => {
    timer = setTimeout(() => resolve('waited'), deps.waitMs);
  });
  const canceled = new Promise<'canceled'>((resolve) => {
    if (call.signal.aborted) resolve('canceled');
    call.signal.addEventListener('abort', () => resolve('canceled'), { once: true });
  });
  try {
    const outcome = await Promise.race([following.followed, waited, canceled]);
    if (outcome === 'waited') return stillRunning(runId, threadId, deps.waitMs);
    if (outcome === 'canceled') {
      await deps.runs.cancel(principal.orgId, runId).catch(() => {});
      return errorResult('The call was canceled, and its run with it', { 'crewd/run_id': runId });
    }
    const end = 'end' in outcome ? outcome.end : await readEnd(deps, principal.orgId, runId);
    return end ? endResult(end, runId, threadId) : stillRunning(runId, threadId, deps.waitMs);
  } finally {
    clearTimeout(timer);
    following.stop();
  }
}
