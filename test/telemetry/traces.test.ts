import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunContext, crew, deploy, type RunContext, until, waitForRun } from '../runs/helpers.js';

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes: { key: string; value: OtlpValue }[];
}

/** The OTLP traces request's message, from the protocol's own definitions (fixtures/otlp-trace.proto). */
const ExportTraceServiceRequest = protobuf
  .loadSync(path.resolve(import.meta.dirname, 'fixtures/otlp-trace.proto'))
  .lookupType('opentelemetry.proto.common.v1.ExportTraceServiceRequest');

interface TracesRequest {
  resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
}

/** A protobuf request decoded to OTLP/JSON's shape: ids as hex, 64-bit numbers as strings, defaults left out. */
function decodeProtobuf(body: Buffer): TracesRequest {
  const decoded = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), {
    longs: String,
    arrays: true,
  }) as TracesRequest;
  for (const resource of decoded.resourceSpans)
    for (const scope of resource.scopeSpans)
      for (const span of scope.spans) {
        const ids = span as unknown as Record<'traceId' | 'spanId' | 'parentSpanId', Uint8Array | string | undefined>;
        for (const key of ['traceId', 'spanId', 'parentSpanId'] as const)
          if (ids[key] instanceof Uint8Array) ids[key] = Buffer.from(ids[key]).toString('hex');
      }
  return decoded;
}

/**
 * A real OTLP/HTTP receiver on loopback: it keeps every span of every request it is sent,
 * decoding protobuf (application/x-protobuf) or JSON (application/json) as the request says.
 */
async function startReceiver(): Promise<{ server: Server; url: string; spans: OtlpSpan[]; requests: string[] }> {
  const spans: OtlpSpan[] = [];
  const requests: string[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const type = request.headers['content-type'];
      requests.push(`${request.method} ${request.url} ${type}`);
      const body = Buffer.concat(chunks);
      const parsed =
        type === 'application/x-protobuf' ? decodeProtobuf(body) : (JSON.parse(body.toString()) as TracesRequest);
      for (const resource of parsed.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      response
        .writeHead(200, { 'content-type': type ?? 'application/json' })
        .end(type === 'application/json' ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, spans, requests };
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((item) => item.key === key)?.value;
  if (!value) return undefined;
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.doubleValue ?? value.boolValue;
};

const EVENTS = [
  { type: 'task.started', data: { task: 'research', agent: 'Researcher' } },
  { type: 'agent.action', data: { agent: 'Researcher', action: 'started', task: 'research' } },
  { type: 'tool_use', data: { tool: 'search', input: 'solar', agent: 'Researcher' } },
  { type: 'tool_use', data: { tool: 'search', output: 'panels', agent: 'Researcher' } },
  {
    type: 'llm.call',
    data: {
      model: 'gpt-4o-mini',
      provider: 'openai',
      agent: 'Researcher',
      duration_ms: 3,
      usage: { input_tokens: 100, cached_input_tokens: 40, output_tokens: 20 },
    },
  },
  { type: 'agent.action', data: { agent: 'Researcher', action: 'finished', task: 'research' } },
  { type: 'task.completed', data: { task: 'research', agent: 'Researcher' } },
];

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** The spans of one run's trace, its root first, once they have arrived. */
const spansOf = (receiver: Receiver, runId: string) =>
  until(() => {
    const root = receiver.spans.find((span) => attribute(span, 'crewd.run.id') === runId);
    return root && [root, ...receiver.spans.filter((span) => span.traceId === root.traceId && span !== root)];
  });

/** Runs the scripted crew under a caller's traceparent and checks every span it sends: names, parents, attributes. */
async function expectCallerTrace(ctx: RunContext, receiver: Receiver, deploymentId: string): Promise<void> {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const callerSpan = '00f067aa0ba902b7';
  const created = await ctx.call('POST', '/v1/runs', {
    body: { deployment_id: deploymentId, input: { events: EVENTS, pause_ms: 2 } },
    headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
  });
  expect(created.statusCode).toBe(202);
  const runId = created.json().run_id as string;
  const run = await waitForRun(ctx, runId);
  expect(run.status).toBe('succeeded');
  expect(run.trace_id).toBe(traceId);

  const spans = await spansOf(receiver, runId);
  const named = (name: string) => spans.find((span) => span.name === name) as OtlpSpan;
  const root = spans[0] as OtlpSpan;
  expect(root.name).toBe(`invoke_workflow ${deploymentId}`);
  expect(root.traceId).toBe(traceId);
  expect(root.parentSpanId).toBe(callerSpan);
  expect(attribute(root, 'gen_ai.operation.name')).toBe('invoke_workflow');
  expect(attribute(root, 'crewd.deployment.id')).toBe(deploymentId);
  expect(attribute(root, 'crewd.version.id')).toBe(run.version_id);
  expect(attribute(root, 'crewd.organization.id')).toMatch(/^org_/);
  expect(attribute(root, 'gen_ai.usage.input_tokens')).toBe(100);
  expect(spans.map((span) => span.name).sort()).toEqual(
    [root.name, 'task research', 'invoke_agent Researcher', 'execute_tool search', 'chat gpt-4o-mini'].sort(),
  );
  const task = named('task research');
  const agent = named('invoke_agent Researcher');
  const tool = named('execute_tool search');
  const chat = named('chat gpt-4o-mini');
  expect(task.parentSpanId).toBe(root.spanId);
  expect(agent.parentSpanId).toBe(task.spanId);
  expect(tool.parentSpanId).toBe(agent.spanId);
  expect(chat.parentSpanId).toBe(agent.spanId);
  expect(attribute(agent, 'gen_ai.agent.name')).toBe('Researcher');
  expect(attribute(tool, 'gen_ai.tool.name')).toBe('search');
  expect(attribute(tool, 'gen_ai.operation.name')).toBe('execute_tool');
  expect(attribute(chat, 'gen_ai.operation.name')).toBe('chat');
  expect(attribute(chat, 'gen_ai.provider.name')).toBe('openai');
  expect(attribute(chat, 'gen_ai.request.model')).toBe('gpt-4o-mini');
  expect(attribute(chat, 'gen_ai.usage.input_tokens')).toBe(100);
  expect(attribute(chat, 'gen_ai.usage.output_tokens')).toBe(20);
  expect(attribute(chat, 'gen_ai.usage.cache_read.input_tokens')).toBe(40);
  // Timed by the events: the tool's span lies within its agent's, which lies within the task's.
  expect(BigInt(tool.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(agent.startTimeUnixNano));
  expect(BigInt(agent.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(task.endTimeUnixNano));
}

/** A crewd with OTLP pointed at a receiver on loopback (and the protocol setting given, if any), one crew deployed. */
function tracedCrewd(env: Record<string, string> = {}) {
  const setup = {} as { ctx: RunContext; receiver: Receiver; deploymentId: string };
  beforeAll(async () => {
    setup.receiver = await startReceiver();
    setup.ctx = await createRunContext({
      OTEL_EXPORTER_OTLP_ENDPOINT: setup.receiver.url,
      OTEL_SERVICE_NAME: 'crewd-test',
      ...env,
    });
    ({ deploymentId: setup.deploymentId } = await deploy(setup.ctx, crew('scripted.mjs')));
  });
  afterAll(async () => {
    await setup.ctx?.close();
    setup.receiver?.server.close();
  });
  return setup;
}

describe('one OpenTelemetry trace per run, over OTLP/HTTP with protobuf by default (CONTRACTS §15)', () => {
  const setup = tracedCrewd();

  it('sends a run’s spans under the caller’s traceparent: tasks, agents, tools and LLM calls with GenAI attributes', async () => {
    await expectCallerTrace(setup.ctx, setup.receiver, setup.deploymentId);
    expect(setup.receiver.requests[0]).toBe('POST /v1/traces application/x-protobuf');
  });

  it('starts a trace of its own without traceparent, and runs of one thread share its conversation id', async () => {
    const { ctx, receiver, deploymentId } = setup;
    const thread = (await ctx.call('POST', '/v1/threads', { body: { deployment_id: deploymentId } })).json();
    const runIds: string[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await ctx.call('POST', `/v1/threads/${thread.thread_id}/runs`, { body: { input: {} } });
      expect(created.statusCode).toBe(202);
      runIds.push(created.json().run_id);
      await waitForRun(ctx, created.json().run_id);
    }
    const roots = await Promise.all(
      runIds.map(async (id) => ((await spansOf(receiver, id)) as OtlpSpan[])[0] as OtlpSpan),
    );
    for (const [index, root] of roots.entries()) {
      expect(root.parentSpanId ?? '').toBe('');
      expect(attribute(root, 'gen_ai.conversation.id')).toBe(thread.thread_id);
      expect((await ctx.call('GET', `/v1/runs/${runIds[index]}`)).json().trace_id).toBe(root.traceId);
    }
    expect(roots[0]?.traceId).not.toBe(roots[1]?.traceId);
  });
});

describe('one OpenTelemetry trace per run with OTEL_EXPORTER_OTLP_PROTOCOL=http/json', () => {
  const setup = tracedCrewd({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });

  it('sends the same spans as JSON', async () => {
    await expectCallerTrace(setup.ctx, setup.receiver, setup.deploymentId);
    expect(setup.receiver.requests[0]).toBe('POST /v1/traces application/json');
  });
});
