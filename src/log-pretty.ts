import type { DestinationStream } from 'pino';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
const COLOURS: Record<number, string> = { 40: '\u001b[33m', 50: '\u001b[31m', 60: '\u001b[31m' };
const RESET = '\u001b[0m';
/** pino's own fields, shown in the line's head or not at all. */
const HEAD_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'v']);

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) ? JSON.stringify(value) : value;
  return JSON.stringify(value);
}

/** One JSON log line as a line people read: `12:00:01 INFO  message key=value …`, errors with their stack. */
export function prettyLine(json: string, colour: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json);
  } catch {
    return json;
  }
  const level = typeof entry.level === 'number' ? entry.level : 30;
  const time = new Date(typeof entry.time === 'number' ? entry.time : Date.now()).toTimeString().slice(0, 8);
  const label = LEVELS[level] ?? String(level);
  const head = colour && COLOURS[level] ? `${COLOURS[level]}${label}${RESET}` : label;
  const fields: string[] = [];
  let stack = '';
  for (const [key, value] of Object.entries(entry)) {
    if (HEAD_FIELDS.has(key)) continue;
    if (key === 'err' && value && typeof value === 'object' && 'stack' in value) {
      stack = `\n    ${String((value as { stack: unknown }).stack).replaceAll('\n', '\n    ')}`;
      continue;
    }
    fields.push(`${key}=${formatValue(value)}`);
  }
  const message = typeof entry.msg === 'string' ? entry.msg : '';
  return `${time} ${head} ${message}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}${stack}\n`;
}

/** A pino destination writing readable lines to standard output (LOG_FORMAT=pretty, the default on a terminal). */
export function prettyDestination(out: NodeJS.WriteStream = process.stdout): DestinationStream {
  const colour = out.isTTY === true;
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line !== '') out.write(prettyLine(line, colour));
    },
  };
}
