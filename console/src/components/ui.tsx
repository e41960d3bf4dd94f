import { type ReactNode, useId } from 'react';
import { errorMessage } from '../../../src/client/index.js';

/** An API error shown as its message, announced to screen readers. */
export function ErrorText({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p role="alert" className="error">
      {errorMessage(error)}
    </p>
  );
}

export function Field({
  label,
  children,
  hint,
}: {
  label: string;
  hint?: string;
  children: (id: string) => ReactNode;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id)}
      {hint ? <small>{hint}</small> : null}
    </div>
  );
}

/** A status as a badge; an `interrupted` thread, or a run stopped at an interrupt, reads "waiting for input". */
export function Status({ value }: { value: string }) {
  if (value === 'interrupted') return <span className="status status-waiting">waiting for input</span>;
  return <span className={`status status-${value}`}>{value}</span>;
}

export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <figure className="json-figure">
      <figcaption>{label}</figcaption>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a long value scrolls sideways, which takes keyboard focus */}
      <pre className="json" tabIndex={0}>
        {JSON.stringify(value, null, 2)}
      </pre>
    </figure>
  );
}

// One formatter for every timestamp: toLocaleString builds a new one per call, which is slow for long lists.
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <>—</>;
  return <time dateTime={at}>{dateFormat.format(new Date(at))}</time>;
}

/** Parses a JSON text field, naming the field when it is not valid JSON. */
export function parseJson(text: string, field: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${field} is not valid JSON`);
  }
}

export function Pager({
  offset,
  limit,
  total,
  count,
  onChange,
}: {
  offset: number;
  limit: number;
  total?: number;
  count: number;
  onChange(offset: number): void;
}) {
  const more = total === undefined ? count === limit : offset + count < total;
  return (
    <nav className="pager" aria-label="Pages">
      <button type="button" disabled={offset === 0} onClick={() => onChange(Math.max(0, offset - limit))}>
        Previous page
      </button>
      <span>
        {count === 0 ? 0 : offset + 1}–{offset + count}
        {total === undefined ? '' : ` of ${total}`}
      </span>
      <button type="button" disabled={!more} onClick={() => onChange(offset + limit)}>
        Next page
      </button>
    </nav>
  );
}
