import { randomBytes } from 'node:crypto';
import { type Attributes, context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TracingSettings } from '../config.js';
import type { LaunchSpec } from '../run-record/types.js';
import { secretMasker } from '../secret-mask.js';
import { planSpans, usageAttributes } from './run-spans.js';
import type { RunTrace, RunTracer, TracedEnd } from './tracer-types.js';

/** Span-making events one run keeps for its trace; past it, later ones are left out of the trace. */
const MAX_TRACED_EVENTS = 10_000;
const SPAN_EVENT_TYPES = new Set([
  'task.started',
  'task.completed',
  'task.failed',
  'node.completed',
  'agent.action',
  'tool_use',
  'llm.call',
]);

/** A graph's runner is started with --graph (src/builds): its run is an agent's invocation, else a workflow's. */
const isGraph = (spec: LaunchSpec) => spec.version.command.includes('--graph');

/** The OTLP/HTTP exporter of the configured protocol, the only one loaded: http/protobuf (the default) or http/json. */
async function otlpExporter(settings: TracingSettings): Promise<SpanExporter> {
  const options = { url: settings.url, headers: settings.headers };
  if (settings.protocol === 'http/json')
    return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(options);
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(options);
}

/**
 * Exports one trace per run over OTLP/HTTP (CONTRACTS §15). Spans are made when the run ends, from
 * its events and the times they arrived, so the runner needs no OpenTelemetry of its own. This
 * module (and the SDK) is imported only when tracing is configured.
 */
export async function createRunTracer(settings: TracingSettings): Promise<RunTracer> {
  /** The trace id the next root span takes: the run's, chosen when the run was created. */
  let nextTraceId: string | null = null;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
    idGenerator: {
      generateTraceId: () => nextTraceId ?? randomBytes(16).toString('hex'),
      generateSpanId: () => randomBytes(8).toString('hex'),
    },
    spanProcessors: [new BatchSpanProcessor(await otlpExporter(settings), { scheduledDelayMillis: 1000 })],
  });
  const tracer = provider.getTracer('crewd');

  function rootSpan(spec: LaunchSpec, start: number, traceId: string, parentId: string | null): Span {
    const graph = isGraph(spec);
    const operation = graph ? 'invoke_agent' : 'invoke_workflow';
    const attributes: Attributes = {
      'gen_ai.operation.name': operation,
      'crewd.run.id': spec.run.id,
      'crewd.deployment.id': spec.run.deployment_id,
      'crewd.version.id': spec.run.version_id,
      'crewd.organization.id': spec.run.org_id,
    };
    if (graph) attributes['gen_ai.agent.name'] = spec.run.deployment_id;
    if (spec.run.thread_id) attributes['gen_ai.conversation.id'] = spec.run.thread_id;
    const parent = parentId
      ? trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: parentId, traceFlags: 1, isRemote: true })
      : ROOT_CONTEXT;
    nextTraceId = traceId;
    try {
      const name = `${operation} ${spec.run.deployment_id}`;
      return tracer.startSpan(name, { kind: SpanKind.INTERNAL, startTime: start, attributes }, parent);
    } finally {
      nextTraceId = null;
    }
  }

  function finish(span: Span, at: number, error: string | null | undefined): void {
    if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    span.end(at);
  }

  return {
    start(spec) {
      const traceId = spec.run.trace_id;
      if (!traceId) return null;
      const started = Date.now();
      const events: { type: string; data: Record<string, unknown>; at: number }[] = [];
      const run: RunTrace = {
        event(type, data) {
          if (SPAN_EVENT_TYPES.has(type) && events.length < MAX_TRACED_EVENTS)
            events.push({ type, data, at: Date.now() });
        },
        end(outcome: TracedEnd) {
          const ended = Date.now();
          // The errors are the crew's own words (a task's error, its last stderr line): it may say its secrets.
          const mask = secretMasker(outcome.secrets);
          const root = rootSpan(spec, started, traceId, spec.run.trace_parent_id ?? null);
          root.setAttributes({ 'crewd.run.status': outcome.status, ...usageAttributes(outcome.usage) });
          if (outcome.usage?.cost != null) root.setAttribute('crewd.usage.cost', outcome.usage.cost);
          const made: Span[] = [];
          for (const planned of planSpans(events, started, ended)) {
            const parent = planned.parent >= 0 ? (made[planned.parent] as Span) : root;
            const ctx = trace.setSpan(context.active(), parent);
            const span = tracer.startSpan(
              planned.name,
              { startTime: planned.start, attributes: planned.attributes },
              ctx,
            );
            made.push(span);
            finish(span, planned.end, planned.error && mask(planned.error));
          }
          finish(root, ended, outcome.status === 'failed' ? mask(outcome.error ?? 'Run failed') : null);
        },
      };
      return run;
    },
    shutdown: () => provider.shutdown(),
  };
}
