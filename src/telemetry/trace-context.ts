import { randomBytes } from 'node:crypto';

/** What a new run's row holds of its trace (CONTRACTS §15). */
export interface RunTraceIds {
  trace_id: string;
  /** The caller's span (from `traceparent`), the run's span's parent; null: the run's span is the trace's root. */
  trace_parent_id: string | null;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * A W3C `traceparent` header's trace and span ids; null for a header that is not one (the run then
 * starts a trace of its own, as the W3C spec asks of a receiver that cannot parse it).
 */
export function parseTraceparent(header: string | undefined | null): { traceId: string; spanId: string } | null {
  const match = header ? TRACEPARENT.exec(header.trim().toLowerCase()) : null;
  if (!match) return null;
  const [, version, traceId, spanId] = match as unknown as [string, string, string, string];
  if (version === 'ff' || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  if (version === '00' && match[5] !== undefined) return null;
  return { traceId, spanId };
}

/** The trace of a new run: the caller's, under its span, or a new one. */
export function runTraceIds(traceparent: string | undefined | null): RunTraceIds {
  const parent = parseTraceparent(traceparent);
  if (parent) return { trace_id: parent.traceId, trace_parent_id: parent.spanId };
  return { trace_id: randomBytes(16).toString('hex'), trace_parent_id: null };
}
