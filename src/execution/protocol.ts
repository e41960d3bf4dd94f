import { MAX_JSON_DEPTH, nestedDeeperThan } from '../json-depth.js';
import { RUN_LIMITS } from '../run-limits.js';
import { type LlmCall, parseLlmCall } from '../telemetry/usage.js';
import type { LongLine } from './line-splitter.js';

/** What one line of a runner's standard output means (CONTRACTS §6). */
export type RunnerMessage =
  /** `llmCall`: an `llm.call` event's model and usage (CONTRACTS §15), when it names a model. */
  | { kind: 'event'; type: string; data: Record<string, unknown>; llmCall?: LlmCall }
  | ({ kind: 'result' } & RunnerResult)
  /** A `store.call` line: a call the runner waits to have answered (run-calls.ts), never stored as an event. */
  | { kind: 'call'; data: Record<string, unknown> }
  | { kind: 'failure'; error: string }
  /** A result the service cannot accept; the run fails with this error. */
  | { kind: 'bad_result'; error: string };

/**
 * A runner's result: `run.completed`, or `run.interrupted` (then `interrupts` is set, and the line
 * itself is relayed as an event). `checkpoint` is the runner's own state, opaque to crewd.
 */
export interface RunnerResult {
  output: Record<string, unknown>;
  values: Record<string, unknown> | undefined;
  checkpoint: unknown;
  interrupts: RunnerInterrupt[] | null;
  /** The `run.interrupted` line's data, relayed as it is. */
  event?: Record<string, unknown>;
}

export interface RunnerInterrupt {
  id?: string;
  value: unknown;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const RESULT_PREFIX = /^\s*\{\s*"type"\s*:\s*"run\.(completed|interrupted)"/;
const isResultType = (type: string) => type === 'run.completed' || type === 'run.interrupted';

/** PostgreSQL's text and jsonb cannot hold U+0000; it becomes U+FFFD, the replacement character. */
export function withoutNul(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** An escape in JSON text that can put U+0000 or half of a surrogate pair into a parsed string. */
const UNSTORABLE_ESCAPE = /\\u(0000|[dD][89a-fA-F])/;

/** Neither can jsonb hold half of a surrogate pair, which JSON escapes can make: it becomes U+FFFD too. */
function storable(text: string): string {
  return withoutNul(text).replace(LONE_SURROGATE, '\uFFFD');
}

/** `storable` through a parsed JSON value, keys included. */
function storableJson(value: unknown): unknown {
  if (typeof value === 'string') return storable(value);
  if (Array.isArray(value)) return value.map(storableJson);
  if (isObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [storable(key), storableJson(item)]));
  }
  return value;
}

/** Parses one stdout line; anything that is not `{type: string, data: object}` is a log line. Blank lines: null. */
export function parseStdoutLine(raw: string): RunnerMessage | null {
  if (raw.trim() === '') return null;
  const line = withoutNul(raw);
  const asLog = (): RunnerMessage => ({ kind: 'event', type: 'log', data: { message: line } });
  if (!line.trimStart().startsWith('{')) return asLog();
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return asLog();
  }
  // Raw text from the runner holds neither (its UTF-8 decoding makes U+FFFD of bad bytes); escapes can.
  if (UNSTORABLE_ESCAPE.test(line)) parsed = storableJson(parsed);
  if (!isObject(parsed) || typeof parsed.type !== 'string' || parsed.type === '' || !isObject(parsed.data)) {
    return asLog();
  }
  const { type, data } = parsed;
  if (type === 'run.failed') {
    const error = typeof data.error === 'string' && data.error !== '' ? data.error : 'Runner reported a failure';
    return { kind: 'failure', error };
  }
  if (type === 'store.call') return { kind: 'call', data };
  // Only a line of 2 × MAX_JSON_DEPTH characters or more can nest that deep.
  if (line.length > 2 * MAX_JSON_DEPTH && nestedDeeperThan(data, MAX_JSON_DEPTH - 1)) return tooDeep(type);
  if (isResultType(type)) return parseResult(type, data, Buffer.byteLength(line));
  if (type === 'llm.call') {
    const llmCall = parseLlmCall(data);
    if (llmCall) return { kind: 'event', type, data, llmCall };
  }
  return { kind: 'event', type, data };
}

/** `{id?, value}` items, or why not. */
function parseInterrupts(value: unknown): RunnerInterrupt[] | string {
  const shape = 'Runner interrupt data.interrupts must be a JSON array of {"id"?: string, "value": any} objects';
  if (!Array.isArray(value)) return shape;
  const interrupts: RunnerInterrupt[] = [];
  for (const item of value) {
    if (!isObject(item) || !('value' in item) || (item.id !== undefined && typeof item.id !== 'string')) return shape;
    interrupts.push(item.id === undefined ? { value: item.value } : { id: item.id, value: item.value });
  }
  return interrupts;
}

function parseResult(type: string, data: Record<string, unknown>, lineBytes: number): RunnerMessage {
  const interrupted = type === 'run.interrupted';
  const what = interrupted ? 'Runner interrupt' : 'Runner result';
  const interrupts = interrupted ? parseInterrupts(data.interrupts) : null;
  if (typeof interrupts === 'string') return { kind: 'bad_result', error: interrupts };
  const output = interrupts ? { interrupts } : (data.output ?? {});
  if (!isObject(output)) return { kind: 'bad_result', error: `${what} output must be a JSON object` };
  if (data.values !== undefined && !isObject(data.values)) {
    return { kind: 'bad_result', error: `${what} values must be a JSON object` };
  }
  // The line bounds the output already; measure the output itself only when it might be over.
  if (lineBytes > RUN_LIMITS.maxOutputBytes && Buffer.byteLength(JSON.stringify(output)) > RUN_LIMITS.maxOutputBytes) {
    return { kind: 'bad_result', error: outputTooLarge() };
  }
  const result: RunnerMessage = {
    kind: 'result',
    output,
    values: data.values as Record<string, unknown> | undefined,
    checkpoint: data.checkpoint,
    interrupts,
  };
  if (interrupted) result.event = data;
  return result;
}

/** A line nested too deep for PostgreSQL to store: a result fails the run, an event becomes a notice. */
function tooDeep(type: string): RunnerMessage {
  if (isResultType(type)) {
    return { kind: 'bad_result', error: `Runner result is nested deeper than ${MAX_JSON_DEPTH} levels` };
  }
  return {
    kind: 'event',
    type: 'log',
    data: { message: `Event dropped: nested deeper than ${MAX_JSON_DEPTH} levels`, type },
  };
}

export const outputTooLarge = () =>
  `Runner output exceeds the limit of ${RUN_LIMITS.maxOutputBytes / (1024 * 1024)} MiB`;

/** An over-long line becomes a notice; an over-long result fails the run. */
export function parseLongLine(line: LongLine, stream: 'stdout' | 'stderr'): RunnerMessage {
  if (stream === 'stdout' && RESULT_PREFIX.test(line.head)) return { kind: 'bad_result', error: outputTooLarge() };
  const data: Record<string, unknown> = {
    message: `Line truncated: ${line.bytes} bytes exceed the limit of ${RUN_LIMITS.maxLineBytes} bytes per line`,
    truncated: true,
    bytes: line.bytes,
    head: withoutNul(line.head),
  };
  if (stream === 'stderr') data.stream = 'stderr';
  return { kind: 'event', type: 'log', data };
}

export function stderrEvent(line: string): RunnerMessage {
  return { kind: 'event', type: 'log', data: { message: line, stream: 'stderr' } };
}
