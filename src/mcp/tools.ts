import type { ToolDeployment } from './repository.js';

type JsonSchema = Record<string, unknown>;

/** What a tool is made of: the deployment it runs, and how MCP clients see it. */
export interface DeploymentTool {
  deploymentId: string;
  /** A LangGraph graph: each call runs in a thread of its own, so an interrupt can be answered. */
  graph: boolean;
  tool: {
    name: string;
    description: string;
    inputSchema: JsonSchema & { type: 'object' };
    outputSchema?: JsonSchema & { type: 'object' };
  };
}

/**
 * Tool names as hosts take them: 1 to 64 of A-Z a-z 0-9 _ -. The 2025-11-25 rule also allows `.` and up to 128, but
 * Claude Desktop and claude.ai withhold every tool of a server when one name is outside this, and OpenAI's API
 * refuses it.
 */
const MAX_NAME = 64;

/** A deployment's name made a valid tool name: other characters become `_`. */
export function toolName(name: string): string {
  const valid = name.replace(/[^A-Za-z0-9_-]+/g, '_').replace(/^_+|_+$/g, '');
  return (valid === '' ? 'deployment' : valid).slice(0, MAX_NAME);
}

/** The tool's own arguments besides the run's input (docs/mcp.md#interrupts). */
const THREAD_ARGUMENTS: Record<string, JsonSchema> = {
  thread_id: {
    type: 'string',
    description: 'run in this crewd thread; to answer an interrupt, the thread_id the interrupted call returned',
  },
  resume: {
    description: 'the answer to the interrupt the thread waits for (with thread_id); the other arguments are ignored',
  },
};

function objectSchema(value: unknown): (JsonSchema & { type: 'object' }) | null {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const schema = value as JsonSchema;
  return schema.type === 'object' ? (schema as JsonSchema & { type: 'object' }) : null;
}

/**
 * The run's input as a JSON schema: what the build's check recorded (a graph's input schema, a crew's `{placeholders}`
 * as strings, a flow's state model), else any object; plus `thread_id` and `resume`. A graph's `required` is dropped:
 * a call that resumes a thread gives none of it.
 */
function inputSchema(recorded: JsonSchema | null): JsonSchema & { type: 'object' } {
  const input: JsonSchema = objectSchema(recorded?.input) ?? { type: 'object' };
  const { required: _required, properties, ...rest } = input;
  const own = properties && typeof properties === 'object' ? (properties as Record<string, JsonSchema>) : {};
  return { ...rest, type: 'object', properties: { ...own, ...THREAD_ARGUMENTS } };
}

/** What an interrupted call answers as structured content. */
const INTERRUPTED: JsonSchema = {
  type: 'object',
  required: ['interrupts', 'thread_id'],
  properties: { interrupts: { type: 'array' }, thread_id: { type: 'string' } },
};

/** What a call answers as structured content when its run outlasts MCP_CALL_WAIT_SECONDS (call.ts stillRunning). */
const STILL_RUNNING: JsonSchema = {
  type: 'object',
  required: ['status', 'run_id'],
  properties: { status: { const: 'running' }, run_id: { type: 'string' }, thread_id: { type: 'string' } },
};

/**
 * The declared output schema, where the check recorded one, or'ed with an interrupted call's answer and a still
 * running one's: clients check every structured content against it (its `$defs` stay at the root, where its
 * references point).
 */
function outputSchema(recorded: JsonSchema | null): (JsonSchema & { type: 'object' }) | undefined {
  const output = objectSchema(recorded?.output);
  if (!output) return undefined;
  // Its `required` goes: a run's output holds only the state fields some node set, and clients check it.
  const { $defs, required: _required, ...declared } = output;
  return { type: 'object', ...($defs ? { $defs } : {}), anyOf: [declared, INTERRUPTED, STILL_RUNNING] };
}

function description(row: ToolDeployment, recorded: JsonSchema | null): string {
  if (row.description) return row.description;
  if (typeof recorded?.description === 'string' && recorded.description !== '') return recorded.description;
  return `Runs the crewd deployment ${row.name} and answers its output`;
}

/** The tools of an organization's deployments, in the order listed; a name taken already gets the deployment's id. */
export function toTools(rows: ToolDeployment[]): DeploymentTool[] {
  const taken = new Set<string>();
  return rows.map((row) => {
    let name = toolName(row.name);
    if (taken.has(name)) name = `${name.slice(0, MAX_NAME - row.id.length - 1)}_${row.id}`;
    taken.add(name);
    const recorded = row.tool_schemas;
    const output = outputSchema(recorded);
    return {
      deploymentId: row.id,
      graph: typeof row.entrypoint?.graph === 'string',
      tool: {
        name,
        description: description(row, recorded),
        inputSchema: inputSchema(recorded),
        ...(output ? { outputSchema: output } : {}),
      },
    };
  });
}
