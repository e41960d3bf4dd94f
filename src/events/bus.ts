import type { LiveEvent, LiveListener, LiveSubscription, RunEventFeed } from './types.js';

export interface LocalEventBus extends RunEventFeed {
  publish(runId: string, event: LiveEvent): void;
  listenerCount(runId: string): number;
  /** Events of a run going on here have been stored (other instances may now be told). */
  stored?(runId: string, events: readonly LiveEvent[]): void;
}

/**
 * In-process fan-out of run events; publishing never waits on a listener. It knows nothing of the
 * runs themselves: what a new stream missed of a run going on here, the owner of the run adds
 * (execution/running-runs.ts `runFeed`, builds/stream-source.ts `buildFeed`).
 */
export function createLocalEventBus(): LocalEventBus {
  const listeners = new Map<string, Set<LiveListener>>();

  return {
    subscribe(runId: string, listener: LiveListener): LiveSubscription {
      let set = listeners.get(runId);
      if (!set) {
        set = new Set();
        listeners.set(runId, set);
      }
      set.add(listener);
      return {
        live: null,
        close() {
          const current = listeners.get(runId);
          if (!current) return;
          current.delete(listener);
          if (current.size === 0) listeners.delete(runId);
        },
      };
    },

    publish(runId: string, event: LiveEvent) {
      const set = listeners.get(runId);
      if (!set) return;
      for (const listener of set) {
        try {
          listener(event);
        } catch {
          // A broken stream must not keep the event from the others.
        }
      }
    },

    listenerCount: (runId: string) => listeners.get(runId)?.size ?? 0,
  };
}
