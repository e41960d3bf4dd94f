/**
 * Whether other instances are alive to hear this instance's run events; assumed until the
 * database says otherwise. An instance that starts says hello, which counts until the next look.
 */
export class Peers {
  alive = true;
  private heardHello = false;

  constructor(private readonly selfId: string) {}

  hello(instanceId: string): void {
    if (instanceId === this.selfId) return;
    this.alive = true;
    this.heardHello = true;
  }

  /** What the statement writing this instance's lease found of the others. */
  seen(othersAlive: boolean): void {
    this.alive = othersAlive || this.heardHello;
    this.heardHello = false;
  }
}
