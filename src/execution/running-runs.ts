import type { RunEventFeed } from '../events/types.js';
import type { ActiveRun } from './active-run.js';

/**
 * The runs whose processes run on this instance, by id.
 */
export class RunningRuns {
  private readonly runs = new Map<string, ActiveRun>();

  add(run: ActiveRun): void {
    this.runs.set(run.id, run);
  }

  delete(runId: string): void {
    this.runs.delete(runId);
  }

  get(runId: string): ActiveRun | undefined {
    return this.runs.get(runId);
  }

  has(runId: string): boolean {
    return this.runs.has(runId);
  }

  ids(): string[] {
    return [...this.runs.keys()];
  }

  all(): ActiveRun[] {
    return [...this.runs.values()];
  }

  get size(): number {
    return this.runs.size;
  }

  /** The run's end is committed: new streams of it read the store. */
  ended(runId: string): void {
    const run = this.runs.get(runId);
    if (run) run.ended = true;
  }

  /**
   * `feed` as streams of runs see it: a run going on here comes with its owner and its recent events,
   * read after subscribing so that none falls between the two (builds/stream-source.ts does the same for builds).
   */
  runFeed(feed: RunEventFeed): RunEventFeed {
    return {
      subscribe: (runId, listener, onRemoteLost) => {
        const subscription = feed.subscribe(runId, listener, onRemoteLost);
        const run = this.runs.get(runId);
        if (!subscription || !run || run.ended) return subscription;
        return { ...subscription, live: { orgId: run.orgId, backlog: run.log.backlog() } };
      },
    };
  }
}
