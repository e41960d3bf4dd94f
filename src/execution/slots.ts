/** Counts runner processes against MAX_CONCURRENT_RUNS. */
export class Slots {
  private used = 0;

  constructor(private readonly max: number) {}

  tryTake(): boolean {
    if (this.used >= this.max) return false;
    this.used++;
    return true;
  }

  release(): void {
    if (this.used > 0) this.used--;
  }

  get inUse(): number {
    return this.used;
  }
}
