import type { RunUsage, TokenCounts } from '../db/schema/run-usage.js';

/** A span to be, built from a run's events (CONTRACTS §15): names and attributes per the GenAI conventions. */
export interface PlannedSpan {
  name: string;
  start: number;
  end: number;
  /** Index of the parent in the plan; -1: the run's own span. */
  parent: number;
  attributes: Record<string, string | number | boolean>;
  error?: string | undefined;
}

interface TimedEvent {
  type: string;
  data: Record<string, unknown>;
  at: number;
}

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
const count = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;

/** GenAI usage attributes of token counts. */
export function usageAttributes(usage: TokenCounts | RunUsage | null): Record<string, number> {
  if (!usage) return {};
  return {
    'gen_ai.usage.input_tokens': usage.input_tokens,
    'gen_ai.usage.output_tokens': usage.output_tokens,
    'gen_ai.usage.cache_read.input_tokens': usage.cached_input_tokens,
  };
}

/** The provider of a model called `provider/model`, when the runner named none. */
function providerOf(data: Record<string, unknown>): string | null {
  const named = text(data.provider);
  if (named) return named;
  const model = text(data.model);
  const slash = model?.indexOf('/') ?? -1;
  return model && slash > 0 ? model.slice(0, slash) : null;
}

/**
 * Turns a run's events into spans under the run's span: tasks (and flow methods) and graph nodes,
 * agents within them, tool calls and LLM calls within those, each timed by the events that open
 * and close it. What is still open at the end closes with the run.
 */
export function planSpans(events: readonly TimedEvent[], runStart: number, runEnd: number): PlannedSpan[] {
  const spans: PlannedSpan[] = [];
  const openTasks = new Map<string, number>();
  const openAgents = new Map<string, number>();
  const openTools = new Map<string, number>();
  let lastNodeEnd = runStart;
  let currentTask = -1;

  const open = (name: string, start: number, parent: number, attributes: PlannedSpan['attributes']) => {
    spans.push({ name, start, end: Number.NaN, parent, attributes });
    return spans.length - 1;
  };
  const close = (index: number | undefined, at: number, error?: unknown) => {
    if (index === undefined) return;
    const span = spans[index] as PlannedSpan;
    span.end = at;
    if (typeof error === 'string' && error !== '') span.error = error;
  };
  const agentParent = (data: Record<string, unknown>) => {
    const agent = text(data.agent);
    const ofAgent = agent ? openAgents.get(agent) : undefined;
    if (ofAgent !== undefined) return ofAgent;
    const task = text(data.task);
    return (task ? openTasks.get(task) : undefined) ?? currentTask;
  };

  for (const { type, data, at } of events) {
    const task = text(data.task);
    const agent = text(data.agent);
    if (type === 'task.started' && task) {
      currentTask = open(`task ${task}`, at, -1, {
        'crewd.task': task,
        ...(agent ? { 'gen_ai.agent.name': agent } : {}),
      });
      openTasks.set(task, currentTask);
    } else if ((type === 'task.completed' || type === 'task.failed') && task) {
      close(openTasks.get(task), at, data.error);
      openTasks.delete(task);
      if (openTasks.size === 0) currentTask = -1;
    } else if (type === 'node.completed' && text(data.node)) {
      const node = text(data.node) as string;
      close(open(`node ${node}`, lastNodeEnd, -1, { 'crewd.node': node }), at);
      lastNodeEnd = at;
    } else if (type === 'agent.action' && agent) {
      if (data.action === 'started') {
        const parent = (task ? openTasks.get(task) : undefined) ?? currentTask;
        const attributes = { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': agent };
        openAgents.set(agent, open(`invoke_agent ${agent}`, at, parent, attributes));
      } else if (data.action === 'finished' || data.action === 'failed') {
        close(openAgents.get(agent), at, data.error);
        openAgents.delete(agent);
      }
    } else if (type === 'tool_use' && text(data.tool)) {
      const tool = text(data.tool) as string;
      const key = `${agent ?? ''}\u0000${tool}`;
      if ('input' in data && !openTools.has(key)) {
        const attributes = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool };
        openTools.set(key, open(`execute_tool ${tool}`, at, agentParent(data), attributes));
      } else {
        close(openTools.get(key), at, data.error);
        openTools.delete(key);
      }
    } else if (type === 'llm.call' && text(data.model)) {
      const model = text(data.model) as string;
      const started = text(data.started_at) ? Date.parse(data.started_at as string) : Number.NaN;
      const duration = count(data.duration_ms);
      const start = Number.isFinite(started) ? started : duration !== null ? at - duration : at;
      const usage = typeof data.usage === 'object' && data.usage !== null ? (data.usage as TokenCounts) : null;
      const provider = providerOf(data);
      const attributes: PlannedSpan['attributes'] = {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': model,
        ...(provider ? { 'gen_ai.provider.name': provider } : {}),
        ...(agent ? { 'gen_ai.agent.name': agent } : {}),
      };
      for (const [key, value] of Object.entries(usageAttributes(usage)))
        if (count(value) !== null) attributes[key] = value;
      close(open(`chat ${model}`, Math.min(start, at), agentParent(data), attributes), at);
    }
  }
  for (const span of spans) if (Number.isNaN(span.end)) span.end = runEnd;
  return spans;
}
