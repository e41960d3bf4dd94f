import type { LocalEventBus } from './bus.js';
import type { PgEventFeed } from './pg-feed.js';
import type { LiveEvent, LiveListener, LiveSubscription } from './types.js';

/**
 * The local bus with a feed of other instances' runs: runs going on here keep the in-process,
 * zero-latency path; their stored events and ends are announced to the other instances; a
 * stream of a run elsewhere hears it through the remote feed while that feed is up.
 */
export function composeFeeds(local: LocalEventBus, remote: PgEventFeed): LocalEventBus {
  return {
    subscribe(runId: string, listener: LiveListener, onRemoteLost?: () => void): LiveSubscription {
      const here = local.subscribe(runId, listener);
      const there = remote.subscribe(runId, listener, () => onRemoteLost?.());
      return {
        live: here?.live ?? null,
        remote: there !== null,
        close() {
          here?.close();
          there?.close();
        },
      };
    },

    publish(runId: string, event: LiveEvent) {
      local.publish(runId, event);
      // Other events are announced once stored; the end is published after its commit. An end another instance
      // made (`remote`) was announced by it.
      if (event.end && !event.remote) remote.announce(runId, [event]);
    },

    stored(runId: string, events: readonly LiveEvent[]) {
      remote.announce(runId, events);
    },

    listenerCount: (runId) => local.listenerCount(runId),
  };
}
