import { useEffect, useRef, useState } from 'react';
import { type StreamEvent, streamEvents } from '../../../src/client/index.js';
import { ErrorText } from './ui.js';

/** Follows an event stream from its first event; the list fills as events arrive, live. */
export function useEventStream(url: string, key: string, onEnd?: (last: StreamEvent) => void) {
  const [events, setEvents] = useState<StreamEvent[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [ended, setEnded] = useState(false);
  // The latest callback, read when the stream ends; changing it must not reopen the stream.
  const onEndRef = useRef(onEnd);
  onEndRef.current = onEnd;
  useEffect(() => {
    const abort = new AbortController();
    setEvents([]);
    setEnded(false);
    (async () => {
      let last: StreamEvent | null = null;
      for await (const event of streamEvents({ url, apiKey: key, lastEventId: 0, signal: abort.signal })) {
        last = event;
        setEvents((previous) => [...previous, event]);
      }
      setEnded(true);
      if (last) onEndRef.current?.(last);
    })().catch((failure: unknown) => {
      if (!abort.signal.aborted) setError(failure);
    });
    return () => abort.abort();
  }, [url, key]);
  return { events, error, ended };
}

export function Timeline({
  label,
  events,
  error,
  ended,
}: {
  label: string;
  events: StreamEvent[];
  error: unknown;
  ended: boolean;
}) {
  return (
    <section aria-label={label}>
      <h2>{label}</h2>
      <p aria-live="polite">{ended ? 'Stream ended.' : 'Live: following the stream…'}</p>
      <ol className="timeline" aria-label={`${label} events`}>
        {events.map((event, index) => (
          <li key={event.seq ?? `n${index}`}>
            <span className="event-type">{event.data.type}</span>
            <EventText text={summary(event)} />
          </li>
        ))}
      </ol>
      <ErrorText error={error} />
    </section>
  );
}

/** A multi-line text (a traceback, a panel of output) keeps its line breaks in a monospace block. */
function EventText({ text }: { text: string }) {
  return text.includes('\n') ? <pre className="log-text">{text}</pre> : <code>{text}</code>;
}

/** A log event's message, a failure's error, or else the event's data as JSON. */
function summary(event: StreamEvent): string {
  const { type: _type, ...rest } = event.data;
  const inner = 'data' in rest ? rest.data : rest;
  if (inner && typeof inner === 'object') {
    const { message, error } = inner as { message?: unknown; error?: unknown };
    if (typeof message === 'string') return message;
    if (typeof error === 'string') return error;
  }
  return JSON.stringify(inner);
}
