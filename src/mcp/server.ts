import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import type { Kysely } from 'kysely';
import type { Principal } from '../auth/plugin.js';
import type { Database } from '../db/types.js';
import { type CallDeps, callTool } from './call.js';
import type { CallsInFlight } from './calls-in-flight.js';
import { cancelCall, forgetCall, type McpCaller, recordCallRun } from './calls-store.js';
import { listToolDeployments } from './repository.js';
import { type DeploymentTool, toTools } from './tools.js';

export interface McpDeps extends CallDeps {
  db: Kysely<Database>;
  calls: CallsInFlight;
  version: string;
}

/** A short line for a progress notification: the event's type, and its node or message when it has one. */
function progressMessage(type: string, data: unknown): string {
  const detail = data && typeof data === 'object' ? (data as Record<string, unknown>) : {};
  const about = [detail.node, detail.message, detail.name].find((value) => typeof value === 'string');
  return about ? `${type}: ${about as string}` : type;
}

/** Lists are answered empty for what crewd does not serve; initialize advertises tools only. */
const EMPTY_LISTS: Record<string, Record<string, unknown[]>> = {
  'resources/list': { resources: [] },
  'resources/templates/list': { resourceTemplates: [] },
  'prompts/list': { prompts: [] },
};

/**
 * The MCP server one HTTP request speaks to (stateless: each request gets its own, for the key that made it, and
 * the session id its client sent, if any). Tools are the organization's deployments, read at each list and call.
 */
export function createMcpServer(deps: McpDeps, principal: Principal, sessionId: string | null): Server {
  const caller: McpCaller = { orgId: principal.orgId, keyId: principal.keyId, sessionId: sessionId ?? '' };
  const client = `${principal.keyId} ${caller.sessionId}`;
  const server = new Server(
    { name: 'crewd', title: 'crewd', version: deps.version },
    {
      capabilities: { tools: { listChanged: false } },
      instructions: 'Each tool runs one crewd deployment (a crew, flow, graph or command) and answers its output.',
    },
  );
  const tools = async (): Promise<DeploymentTool[]> => toTools(await listToolDeployments(deps.db, principal.orgId));

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (await tools()).map((tool) => tool.tool) }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = (await tools()).find((candidate) => candidate.tool.name === request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    const token = request.params._meta?.progressToken;
    const { requestId } = extra;
    const flight = deps.calls.begin(client, requestId);
    // The call's run, recorded so that a cancellation reaching another instance finds it (calls-store.ts).
    let recorded: Promise<unknown> = Promise.resolve();
    // Each notification names the run, so a client that stops waiting can still find it.
    let meta: Record<string, string> = {};
    const progress =
      token === undefined
        ? null
        : (count: number, event: { type: string; data: unknown }) => {
            const message = progressMessage(event.type, event.data);
            const params = { progressToken: token, progress: count, message, _meta: meta };
            void extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {});
          };
    try {
      return await callTool(deps, {
        principal,
        tool,
        args: request.params.arguments ?? {},
        progress,
        signal: flight.signal,
        started: (runId) => {
          meta = { 'crewd/run_id': runId };
          // Not recorded (the database failed): a cancellation on another instance misses it, this one's does not.
          recorded = recordCallRun(deps.db, caller, requestId, runId)
            .then((canceledFirst) => {
              if (canceledFirst) deps.calls.cancel(client, requestId, 'canceled before its run started');
            })
            .catch(() => {});
        },
      });
    } finally {
      flight.end();
      void recorded.then(() => forgetCall(deps.db, caller, requestId)).catch(() => {});
    }
  });

  // The call is answered here, or by another instance (or not yet begun): then its run is found in the database.
  server.setNotificationHandler(CancelledNotificationSchema, async (notification) => {
    const { requestId, reason } = notification.params;
    if (requestId === undefined || deps.calls.cancel(client, requestId, reason)) return;
    const runId = await cancelCall(deps.db, caller, requestId).catch(() => null);
    if (runId) await deps.runs.cancel(principal.orgId, runId).catch(() => {});
  });

  server.fallbackRequestHandler = async (request) => {
    const empty = EMPTY_LISTS[request.method];
    if (empty) return empty;
    throw new McpError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`);
  };
  return server;
}
