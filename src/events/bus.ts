import type { LiveEvent, LiveListener, LiveRunState, LiveSubscription, RunEventFeed } from './types.js';

/** A run going on here, as a new subscriber sees it: its organization and its recent events. */
export interface LiveRunSource {
  orgId: string;
  backlog(): LiveEvent[];
}

export interface LocalEventBus extends RunEventFeed {
  publish(runId: string, event: LiveEvent): void;
  listenerCount(runId: string): number;
  /** A run started here: until `notLive`, new subscribers get its owner and recent events (no store read needed). */
  live(runId: string, source: LiveRunSource): void;
  /** The run's end committed, or its process is gone: new subscribers read it from the store. */
  notLive(runId: string): void;
  /** Events of a run going on here have been stored (other instances may now be told). */
  stored?(runId: string, events: readonly LiveEvent[]): void;
}

/**
 * In-process fan-out of run events; publishing never waits on a listener. Runs going on here are
 * told to it as they start (src/execution/) and leave it when their end commits, so a new
 * subscriber of one gets what it missed from memory.
 */
export function createLocalEventBus(): LocalEventBus {
  const listeners = new Map<string, Set<LiveListener>>();
  const live = new Map<string, LiveRunSource>();

  function liveState(runId: string): LiveRunState | null {
    const source = live.get(runId);
    return source ? { orgId: source.orgId, backlog: source.backlog() } : null;
  }

  return {
    subscribe(runId: string, listener: LiveListener): LiveSubscription {
      let set = listeners.get(runId);
      if (!set) {
        set = new Set();
        listeners.set(runId, set);
      }
      set.add(listener);
      return {
        live: liveState(runId),
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

    live(runId, source) {
      live.set(runId, source);
    },

    notLive(runId) {
      live.delete(runId);
    },
  };
}
