import type { StreamEvent } from '../client/index.js';

/** Where commands write: stdout for results, stderr for progress and messages. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

const compact = (value: unknown) => (value === undefined ? '' : JSON.stringify(value));

/** One event of a run as a line a person reads: `[seq] type  details`. */
export function humanLine(event: StreamEvent): string {
  const { type, data } = event.data as { type: string; data?: Record<string, unknown> };
  const prefix = event.seq === null ? '' : `[${event.seq}] `;
  if (type === 'log' && data && typeof data.message === 'string') {
    // A message of several lines (a panel, a traceback) keeps them, indented under its head.
    return `${prefix}log${data.stream === 'stderr' ? ' (stderr)' : ''}  ${data.message.replaceAll('\n', '\n    ')}`;
  }
  if (type === 'run.failed') return `${prefix}run.failed  ${String(data?.error ?? '')}`;
  if (type === 'run.interrupted') return `${prefix}run.interrupted  ${questions(data?.interrupts)}`;
  if (type === 'heartbeat') return `${prefix}heartbeat  ${String(event.data.status ?? '')}`;
  return `${prefix}${type}  ${compact(withoutCheckpoint(data))}`;
}

/** An event's data without its `checkpoint` (the runner's own, kilobytes of base64 that nobody reads). */
function withoutCheckpoint(data: Record<string, unknown> | undefined) {
  if (!data || !('checkpoint' in data)) return data;
  const { checkpoint: _checkpoint, ...rest } = data;
  return rest;
}

/**
 * What an interrupt asks, one per interrupt (`{"question": "…"}` values as their question): not its checkpoint, which
 * is the runner's to read and is kilobytes of base64.
 */
function questions(interrupts: unknown): string {
  if (!Array.isArray(interrupts)) return '';
  return interrupts
    .map((interrupt: { value?: unknown }) => {
      const value = interrupt?.value as { question?: unknown } | string | undefined;
      if (typeof value === 'string') return value;
      if (value && typeof value === 'object' && typeof value.question === 'string') return value.question;
      return compact(value ?? null);
    })
    .join(' | ');
}

/**
 * The `complete` of a run as a line, and the exit code it means (0 succeeded, 1 otherwise). A run that failed for want
 * of a setting it names (`OPENAI_API_KEY is required`) is told how crewd gives a crew one: a deployment variable.
 */
export function runEnd(complete: StreamEvent, deployment = '<deployment>'): { line: string; exitCode: number } {
  const { status, error } = complete.data as { status?: string; error?: string | null };
  if (status === 'succeeded') return { line: `run succeeded`, exitCode: 0 };
  const missing = error ? missingSetting(error) : undefined;
  const hint = missing
    ? `\n  (give the crew ${missing} as a deployment variable: crewd variables set ${deployment} ${missing}=…; ` +
      'runs read it from the next one on)'
    : '';
  return { line: `run ${status}${error ? `: ${error}` : ''}${hint}`, exitCode: 1 };
}

const SETTING_NAME = /\b([A-Z][A-Z0-9]*_(?:API_KEY|KEY|TOKEN|SECRET))\b/;
const MISSING = /required|not set|missing|must be set|environment variable/i;

/** The key or token an error says is missing (as LLM clients say it), if it says so. */
function missingSetting(error: string): string | undefined {
  const name = SETTING_NAME.exec(error)?.[1];
  return name && MISSING.test(error) ? name : undefined;
}

/** Rows as tab-separated lines (null as `-`), for reading and for `cut`. */
export function writeRows(io: Io, rows: Array<Array<string | number | boolean | null | undefined>>) {
  for (const row of rows)
    io.out(row.map((cell) => (cell === null || cell === undefined ? '-' : String(cell))).join('\t'));
}
