import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { type OrganizationsWatch, organizationShare, watchOrganizations } from '../access/organization-share.js';
import type { Database } from '../db/types.js';
import { AppError, badRequest } from '../errors.js';
import type { RunEventFeed } from '../events/types.js';
import type { RunObserver } from '../run-record/observer.js';
import { RunStream, type StreamTimings } from './stream.js';
import { runStreamSource, type StreamSource } from './stream-source.js';

/** How often relayed events are reported in one batch, rather than one call per event and client. */
const REPORT_MS = 1000;

/** Event ids are stored as 32-bit integers: a resume point past the largest cannot name an event. */
const MAX_EVENT_ID = 2_147_483_647;

export interface StreamLimits {
  /** Streams open at once on this instance (MAX_EVENT_STREAMS). */
  total: number;
  /** Streams one API key may hold open at once on this instance (MAX_EVENT_STREAMS_PER_KEY). */
  perKey: number;
  /** Streams one organization may hold (MAX_EVENT_STREAMS_PER_ORGANIZATION); 0: a share computed from `total`. */
  perOrganization: number;
}

const tooManyStreams = (message: string) => new AppError(429, 'rate_limited', message);

/** Opens event streams and keeps track of them, so a shutdown can end them all. */
export function createRunStreams(options: {
  db: Kysely<Database>;
  feed: RunEventFeed;
  instanceId: () => string;
  timings: StreamTimings;
  lifetimeMs: number;
  logger: Logger;
  observer?: RunObserver;
  limits: StreamLimits;
  /** Whether the installation has several organizations (the instance's one watch); made here if not given. */
  organizations?: OrganizationsWatch;
}) {
  const open = new Set<RunStream>();
  const openByKey = new Map<string, number>();
  const openByOrganization = new Map<string, number>();
  const { limits } = options;
  const organizations = options.organizations ?? watchOrganizations(options.db);
  void organizations.current();

  /**
   * Refuses a stream past any cap, so that neither one key's clients nor one organization's keys (an admin makes
   * any number) take every stream of the instance.
   */
  function admit({ orgId, keyId }: { orgId: string; keyId: string }): void {
    organizations.sawOrganizations([orgId, ...openByOrganization.keys()]);
    const held = openByKey.get(keyId) ?? 0;
    if (held >= limits.perKey) {
      throw tooManyStreams(
        `This API key already holds ${held} open event streams, the most MAX_EVENT_STREAMS_PER_KEY allows; close one first`,
      );
    }
    if (open.size >= limits.total) {
      throw tooManyStreams(
        `This instance already serves ${open.size} event streams, the most MAX_EVENT_STREAMS allows; retry later`,
      );
    }
    const ofOrganization = openByOrganization.get(orgId) ?? 0;
    if (ofOrganization >= organizationShare(limits.total, organizations.several, limits.perOrganization)) {
      throw tooManyStreams(
        `This organization already holds ${ofOrganization} open event streams, its share of MAX_EVENT_STREAMS (MAX_EVENT_STREAMS_PER_ORGANIZATION); close one first`,
      );
    }
    openByKey.set(keyId, held + 1);
    openByOrganization.set(orgId, ofOrganization + 1);
  }

  function release({ orgId, keyId }: { orgId: string; keyId: string }): void {
    for (const [counts, id] of [
      [openByKey, keyId],
      [openByOrganization, orgId],
    ] as const) {
      const held = (counts.get(id) ?? 1) - 1;
      if (held > 0) counts.set(id, held);
      else counts.delete(id);
    }
  }

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
    /**
     * A stream for a key's client, of a run or, with `subject`, of something else kept in the same
     * event log (a build); 400 for a resume point no event can have, 429 past a cap.
     */
    open(
      principal: { orgId: string; keyId: string },
      runId: string,
      resumeAfter: number | null,
      subject: { source: StreamSource; feed: RunEventFeed } = { source: runStreamSource, feed: options.feed },
    ): RunStream {
      if (resumeAfter !== null && resumeAfter > MAX_EVENT_ID) {
        throw badRequest(`Last-Event-ID must be an event id from 0 to ${MAX_EVENT_ID}`);
      }
      admit(principal);
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
        principal.orgId,
        runId,
        resumeAfter,
        subject.source,
      );
      open.add(stream);
      observer.streamOpened?.();
      void stream.done.then(() => {
        open.delete(stream);
        release(principal);
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
