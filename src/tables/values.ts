import type { ColumnKind, StoredColumn } from '../db/schema/tables.js';

/** A value checked against its column, in the form its physical column takes as a parameter. */
export type Checked = { ok: true; value: SqlValue } | { ok: false; reason: string };

/** Parameter forms: text, double, boolean, ISO timestamp text, or JSON text for jsonb. Null is SQL NULL. */
export type SqlValue = string | number | boolean | null;

const DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?)?$/;
const CANONICAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const EMAIL = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/;
const NUMERIC_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * An ISO 8601 date or date-time as a UTC ISO string with milliseconds; undefined when invalid.
 * A date-time without an offset is read as UTC (never as the server's local time).
 */
export function parseDatetime(text: string): string | undefined {
  // The form the API itself returns needs no parsing beyond a round trip.
  if (CANONICAL.test(text)) {
    const date = new Date(text);
    if (!Number.isNaN(date.getTime()) && date.toISOString() === text) return text;
  }
  const m = DATETIME.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (zone && zone !== 'Z' && zone !== 'z') {
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = Number(digits.slice(2) || '0');
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (oh * 60 + om);
  }
  const ms = Number(frac.padEnd(3, '0').slice(0, 3));
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute - offsetMinutes, second, ms);
  const resultYear = date.getUTCFullYear();
  if (resultYear < 1 || resultYear > 9999) return undefined;
  return date.toISOString();
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

export function isUrl(text: string): boolean {
  if (text !== text.trim()) return false;
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

export function isEmail(text: string): boolean {
  return text.length <= 254 && EMAIL.test(text);
}

/** PostgreSQL text and jsonb cannot hold U+0000; refusing it here keeps it a 400, not a 500. */
export function hasNul(text: string): boolean {
  return text.includes('\u0000');
}

export function jsonHasNul(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current === 'string') {
      if (hasNul(current)) return true;
    } else if (current !== null && typeof current === 'object') {
      for (const [key, child] of Object.entries(current)) {
        if (hasNul(key)) return true;
        stack.push(child);
      }
    }
  }
  return false;
}

const fail = (reason: string): Checked => ({ ok: false, reason });
const ok = (value: SqlValue): Checked => ({ ok: true, value });

function checkString(raw: unknown): string | Checked {
  if (typeof raw !== 'string') return fail('must be a string');
  if (hasNul(raw)) return fail('must not contain the NUL character (\\u0000)');
  return raw;
}

/** Validates one cell of an insert or update against its column (null handled by the caller). */
export function checkCell(column: StoredColumn, raw: unknown): Checked {
  switch (column.type) {
    case 'text': {
      const text = checkString(raw);
      return typeof text === 'string' ? ok(text) : text;
    }
    case 'number':
      return typeof raw === 'number' && Number.isFinite(raw) ? ok(raw) : fail('must be a finite number');
    case 'boolean':
      return typeof raw === 'boolean' ? ok(raw) : fail('must be true or false');
    case 'datetime': {
      if (typeof raw !== 'string') return fail('must be an ISO 8601 date-time string');
      const iso = parseDatetime(raw);
      return iso ? ok(iso) : fail('must be an ISO 8601 date-time string');
    }
    case 'select': {
      if (typeof raw === 'string' && column.options?.includes(raw)) return ok(raw);
      return fail(`must be one of the column's options (${describeOptions(column.options ?? [])})`);
    }
    case 'url': {
      const text = checkString(raw);
      if (typeof text !== 'string') return text;
      return isUrl(text) ? ok(text) : fail('must be an absolute http or https URL');
    }
    case 'email': {
      const text = checkString(raw);
      if (typeof text !== 'string') return text;
      return isEmail(text) ? ok(text) : fail('must be an email address');
    }
    case 'json':
      if (jsonHasNul(raw)) return fail('must not contain the NUL character (\\u0000)');
      return ok(JSON.stringify(raw));
  }
}

function describeOptions(options: string[]): string {
  const shown = options.slice(0, 10).map((option) => JSON.stringify(option));
  return options.length > 10 ? `${shown.join(', ')}, …` : shown.join(', ');
}

/** A value as it comes out of the database, turned into its JSON form for a reply. */
export function outputCell(type: ColumnKind, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (type === 'datetime') return value instanceof Date ? value.toISOString() : new Date(String(value)).toISOString();
  return value;
}

/** The text form of a stored value, the bridge for most type changes. */
function textForm(type: ColumnKind, value: unknown): string | undefined {
  switch (type) {
    case 'text':
    case 'select':
    case 'url':
    case 'email':
      return value as string;
    case 'number':
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'datetime':
      return outputCell('datetime', value) as string;
    case 'json':
      return typeof value === 'string' ? value : JSON.stringify(value);
  }
}

/**
 * Converts a stored (non-null) value of type `from` into the column `to`, as a PATCH of the
 * columns does; the same rules as inserts then apply to the result.
 */
export function convertValue(from: ColumnKind, value: unknown, to: StoredColumn): Checked {
  if (to.type === 'json') {
    if (from === 'json') return ok(JSON.stringify(value));
    if (from === 'number' || from === 'boolean') return ok(JSON.stringify(value));
    return ok(JSON.stringify(textForm(from, value)));
  }
  if (to.type === 'number') {
    if (from === 'number') return ok(value as number);
    if (from === 'boolean') return ok(value ? 1 : 0);
    if (from === 'json' && typeof value === 'number') return ok(value);
    if (from === 'datetime' || (from === 'json' && typeof value !== 'string')) return fail('not a number');
    const text = (textForm(from, value) ?? '').trim();
    const number = Number(text);
    return NUMERIC_TEXT.test(text) && Number.isFinite(number) ? ok(number) : fail('not a number');
  }
  if (to.type === 'boolean') {
    if (from === 'boolean' || (from === 'json' && typeof value === 'boolean')) return ok(value as boolean);
    if (from === 'number' || (from === 'json' && typeof value === 'number')) {
      return value === 1 ? ok(true) : value === 0 ? ok(false) : fail('not 0 or 1');
    }
    if (from === 'datetime' || (from === 'json' && typeof value !== 'string')) return fail('not a boolean');
    const text = (textForm(from, value) ?? '').trim().toLowerCase();
    return text === 'true' ? ok(true) : text === 'false' ? ok(false) : fail('not true or false');
  }
  if (to.type === 'datetime') {
    if (from === 'datetime') return ok(outputCell('datetime', value) as string);
    if (from === 'number' || from === 'boolean' || (from === 'json' && typeof value !== 'string')) {
      return fail('not a date-time');
    }
    const iso = parseDatetime(textForm(from, value) ?? '');
    return iso ? ok(iso) : fail('not an ISO 8601 date-time');
  }
  if (from === 'json' && value !== null && typeof value === 'object' && to.type !== 'text') {
    return fail('not a string');
  }
  return checkCell(to, textForm(from, value));
}
