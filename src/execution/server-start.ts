/** A turn to run without the server while it starts: given back once that run's process is gone. */
export interface ColdTurn {
  giveBack(): void;
}

/** What a run that found its version's server not listening yet does next. */
export type StartTurn = { kind: 'server' } | { kind: 'cold'; turn: ColdTurn | null } | { kind: 'abandoned' };

/**
 * The start of a version's server (fork server or worker) as the version's runs see it. While the
 * server imports the crew, one of its runs at a time runs without it, as a process that imports the
 * crew itself; the others wait for the server to listen, or for that turn. Without this, each run
 * that came before the server listened imported the framework again: a burst of runs right after a
 * deploy started a Python process per run, each seconds of CPU and hundreds of MB.
 */
export class ServerStart {
  private state: 'starting' | 'listening' | 'gone' = 'starting';
  private coldTaken = false;
  private readonly waiting = new Set<(turn: StartTurn) => void>();

  /** Whether the server is still starting: neither listening nor gone. */
  get starting(): boolean {
    return this.state === 'starting';
  }

  /** Whether the server said it listens (it may have ended since). */
  get listens(): boolean {
    return this.state === 'listening';
  }

  /** The server listens: every waiting run asks it. */
  listening(): void {
    this.settle('listening');
  }

  /** The server ended (or was retired) before it listened: every run runs without it, as when there is none. */
  gone(): void {
    this.settle('gone');
  }

  /** The cold turn at once when it is free (the server still starting), else null. */
  takeColdTurn(): ColdTurn | null {
    if (!this.starting || this.coldTaken) return null;
    this.coldTaken = true;
    let given = false;
    return {
      giveBack: () => {
        if (given) return;
        given = true;
        this.coldTaken = false;
        this.passTurn();
      },
    };
  }

  /** Waits for the server to settle or for the cold turn; `abandoned` when `signal` aborts first. */
  next(signal: AbortSignal): Promise<StartTurn> {
    const settled = this.settledTurn();
    if (settled) return Promise.resolve(settled);
    const turn = this.takeColdTurn();
    if (turn) return Promise.resolve({ kind: 'cold', turn });
    if (signal.aborted) return Promise.resolve({ kind: 'abandoned' });
    return new Promise((resolve) => {
      const done = (next: StartTurn) => {
        this.waiting.delete(done);
        signal.removeEventListener('abort', abandon);
        resolve(next);
      };
      const abandon = () => done({ kind: 'abandoned' });
      signal.addEventListener('abort', abandon, { once: true });
      this.waiting.add(done);
    });
  }

  private settledTurn(): StartTurn | null {
    if (this.state === 'listening') return { kind: 'server' };
    if (this.state === 'gone') return { kind: 'cold', turn: null };
    return null;
  }

  private settle(state: 'listening' | 'gone'): void {
    if (!this.starting) return;
    this.state = state;
    const turn = this.settledTurn() as StartTurn;
    for (const done of [...this.waiting]) done(turn);
  }

  /** The freed cold turn goes to the run that has waited longest. */
  private passTurn(): void {
    const [first] = this.waiting;
    if (!first || !this.starting) return;
    const turn = this.takeColdTurn();
    if (turn) first({ kind: 'cold', turn });
  }
}
