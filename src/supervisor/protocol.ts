import { RUN_LIMITS } from './limits.js';
import type { LongLine } from './line-splitter.js';

/** What one line of a runner's standard output means (CONTRACTS §6). */
export type RunnerMessage =
  | { kind: 'event'; type: string; data: Record<string, unknown> }
  | { kind: 'result'; output: Record<string, unknown>; values: Record<string, unknown> | undefined }
  | { kind: 'failure'; error: string }
  /** A result the service cannot accept; the run fails with this error. */
  | { kind: 'bad_result'; error: string };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const RESULT_PREFIX = /^\s*\{\s*"type"\s*:\s*"run\.completed"/;

/** Parses one stdout line; anything that is not `{type: string, data: object}` is a log line. Blank lines: null. */
export function parseStdoutLine(line: string): RunnerMessage | null {
  if (line.trim() === '') return null;
  const asLog = (): RunnerMessage => ({ kind: 'event', type: 'log', data: { message: line } });
  if (!line.trimStart().startsWith('{')) return asLog();
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return asLog();
  }
  if (!isObject(parsed) || typeof parsed.type !== 'string' || parsed.type === '' || !isObject(parsed.data)) {
    return asLog();
  }
  const { type, data } = parsed;
  if (type === 'run.completed') return parseResult(data, Buffer.byteLength(line));
  if (type === 'run.failed') {
    const error = typeof data.error === 'string' && data.error !== '' ? data.error : 'Runner reported a failure';
    return { kind: 'failure', error };
  }
  return { kind: 'event', type, data };
}

function parseResult(data: Record<string, unknown>, lineBytes: number): RunnerMessage {
  const output = data.output ?? {};
  if (!isObject(output)) return { kind: 'bad_result', error: 'Runner result output must be a JSON object' };
  if (data.values !== undefined && !isObject(data.values)) {
    return { kind: 'bad_result', error: 'Runner result values must be a JSON object' };
  }
  // The line bounds the output already; measure the output itself only when it might be over.
  if (lineBytes > RUN_LIMITS.maxOutputBytes && Buffer.byteLength(JSON.stringify(output)) > RUN_LIMITS.maxOutputBytes) {
    return { kind: 'bad_result', error: outputTooLarge() };
  }
  return { kind: 'result', output, values: data.values as Record<string, unknown> | undefined };
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
    head: line.head,
  };
  if (stream === 'stderr') data.stream = 'stderr';
  return { kind: 'event', type: 'log', data };
}

export function stderrEvent(line: string): RunnerMessage {
  return { kind: 'event', type: 'log', data: { message: line, stream: 'stderr' } };
}
