import { useLayoutEffect, useRef } from 'react';
import type { StreamEvent } from '../../../src/client/index.js';
import { useSession } from '../session.js';
import { useEventStream } from './timeline.js';
import { ErrorText } from './ui.js';

/**
 * A version's build log as one monospace pane that scrolls inside itself and follows new lines, unless the
 * reader has scrolled up to read an earlier one.
 */
export function BuildLog({
  deploymentId,
  versionId,
  title,
  onEnd,
}: {
  deploymentId: string;
  versionId: string;
  title: string;
  onEnd(): void;
}) {
  const { key } = useSession();
  const url = `/v1/deployments/${encodeURIComponent(deploymentId)}/versions/${encodeURIComponent(versionId)}/build/events`;
  const { events, error, ended } = useEventStream(url, key, onEnd);
  const pane = useRef<HTMLPreElement>(null);
  const following = useRef(true);
  const lines = events.filter((event) => event.data.type === 'build.log').map(lineOf);
  const end = events.find((event) => event.data.type === 'complete')?.data;
  const count = lines.length;
  useLayoutEffect(() => {
    const element = pane.current;
    if (element && following.current && count > 0) element.scrollTop = element.scrollHeight;
  }, [count]);
  return (
    <section aria-label={title}>
      <h2>{title}</h2>
      <p aria-live="polite">{endText(end, ended)}</p>
      <pre
        ref={pane}
        className="build-log"
        role="log"
        aria-label={`${title}: output`}
        // biome-ignore lint/a11y/noNoninteractiveTabindex: focusable, so the pane scrolls with the keyboard too
        tabIndex={0}
        onScroll={(event) => {
          const element = event.currentTarget;
          following.current = element.scrollTop + element.clientHeight >= element.scrollHeight - 4;
        }}
      >
        {lines.length > 0 ? lines.join('\n') : 'No output yet.'}
      </pre>
      <ErrorText error={error} />
    </section>
  );
}

function lineOf(event: StreamEvent): string {
  const message = (event.data.data as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : JSON.stringify(event.data.data);
}

function endText(end: StreamEvent['data'] | undefined, ended: boolean): string {
  if (end?.status === 'ready') return 'Build ready.';
  if (end?.status === 'failed') return `Build failed${end.error ? `: ${String(end.error).split('\n')[0]}` : '.'}`;
  return ended ? 'Stream ended.' : 'Building: following the log…';
}
