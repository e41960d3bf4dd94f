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
}
