/**
 * Counts runner processes against MAX_CONCURRENT_RUNS, and each organization's against its cap
 * (MAX_RUNS_PER_ORGANIZATION), so that one organization's queue cannot take every slot.
 */
export class Slots {
  private used = 0;
  private readonly byOrganization = new Map<string, number>();

  constructor(
    private readonly max: number,
    /** The most slots one organization may hold now. */
    private readonly cap: () => number,
  ) {}

  /** A slot for a run of `orgId`, unless every slot is taken or the organization holds its share. */
  tryTake(orgId: string): boolean {
    if (this.atCap(orgId) || !this.tryTakeAny()) return false;
    this.assign(orgId);
    return true;
  }

  /** Whether a slot is free now (nothing is taken). */
  hasFree(): boolean {
    return this.used < this.max;
  }

  /** A slot not yet given to an organization (the queue then claims a run of one below its cap). */
  tryTakeAny(): boolean {
    if (this.used >= this.max) return false;
    this.used++;
    return true;
  }

  /** Gives a slot taken with tryTakeAny to the organization whose run took it. */
  assign(orgId: string): void {
    this.byOrganization.set(orgId, (this.byOrganization.get(orgId) ?? 0) + 1);
  }

  /** Gives back a slot (of `orgId`, when it had been given to one). */
  release(orgId?: string): void {
    if (this.used > 0) this.used--;
    if (orgId === undefined) return;
    const held = (this.byOrganization.get(orgId) ?? 0) - 1;
    if (held > 0) this.byOrganization.set(orgId, held);
    else this.byOrganization.delete(orgId);
  }

  atCap(orgId: string): boolean {
    return (this.byOrganization.get(orgId) ?? 0) >= this.cap();
  }

  /** The organizations holding their whole share: their queued runs wait for one of their own slots. */
  organizationsAtCap(): string[] {
    const cap = this.cap();
    return [...this.byOrganization].filter(([, held]) => held >= cap).map(([orgId]) => orgId);
  }

  get inUse(): number {
    return this.used;
  }
}
