import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import type { RunEventFeed } from '../events/types.js';
import type { RunObserver } from './observer.js';
import { RunStream, runStreamSource, type StreamSource, type StreamTimings } from './stream.js';

/** How often relayed events are reported in one batch, rather than one call per event and client. */
const REPORT_MS = 1000;

/** Opens event streams and keeps track of them, so a shutdown can end them all. */
export function createRunStreams(options: {
  db: Kysely<Database>;
  feed: RunEventFeed;
  instanceId: () => string;
  timings: StreamTimings;
  lifetimeMs: number;
  logger: Logger;
  observer?: RunObserver;
}) {
  const open = new Set<RunStream>();
  const observer = options.observer ?? {};
  let relayed = 0;
  const countRelayed = () => {
    relayed++;
  };
  const report = () => {
    if (relayed === 0) return;
    observer.eventsRelayed?.(relayed);
    relayed = 0;
  };
  const reporter = setInterval(report, REPORT_MS);
  reporter.unref();

  return {
    /** A stream of a run, or with `subject`, of something else kept in the same event log (a build). */
    open(
      orgId: string,
      runId: string,
      resumeAfter: number | null,
      subject: { source: StreamSource; feed: RunEventFeed } = { source: runStreamSource, feed: options.feed },
    ): RunStream {
      const stream = new RunStream(
        {
          db: options.db,
          feed: subject.feed,
          instanceId: options.instanceId(),
          timings: options.timings,
          lifetimeMs: options.lifetimeMs,
          logger: options.logger,
          relayed: countRelayed,
        },
        orgId,
        runId,
        resumeAfter,
        subject.source,
      );
      open.add(stream);
      observer.streamOpened?.();
      void stream.done.then(() => {
        open.delete(stream);
        report();
        observer.streamClosed?.();
      });
      return stream;
    },

    /** Ends every open stream with an error event saying why; clients resume elsewhere or later. */
    closeAll(notice: string): void {
      for (const stream of open) stream.close(notice);
    },

    get size() {
      return open.size;
    },

    /** Stops the periodic report, after a last one. */
    stop(): void {
      clearInterval(reporter);
      report();
    },
  };
}

export type RunStreams = ReturnType<typeof createRunStreams>;
