import type { Logger } from 'pino';

/** How a claim loop paces its looks; tests inject short ones instead of sleeping. */
export interface ClaimIntervals {
  /** Longest wait between two looks, so work of other instances (or a lost wake) waits at most this; null: only a wake looks. */
  idleMs: number | null;
  /** A look found work due but claimed none of it (another claimer holds it locked a moment): the next look comes after this. */
  busyMs: number;
  /** After a look that failed (the database is unreachable), the next comes after this, doubled per failure in a row… */
  backoffMs: number;
  /** …up to this. */
  maxBackoffMs: number;
}

/** What one look found, so the loop knows when to look next. */
export type Look =
  /** It claimed all it had room for: there may be more, so the next look comes at once. */
  | { kind: 'more' }
  /** No room is left: the next look comes when a job ends (`wake`), or after `idleMs`. */
  | { kind: 'full' }
  /** It claimed what was due; `dueAt` is when the earliest work left falls due (ms since the epoch), if known. */
  | { kind: 'done'; claimed: number; dueAt: number | null };

export interface ClaimLoopOptions {
  /** Names the loop in its log lines ("webhook deliveries"). */
  name: string;
  logger: Logger;
  intervals: ClaimIntervals;
  /**
   * One look: claims the work that is due and there is room for (a SKIP LOCKED claim under a lease
   * that lapses if this instance dies, so another instance takes the work over) and hands it on.
   * A throw is a failed look: the loop backs off and logs it once, not once per look.
   */
  look: () => Promise<Look>;
}

export interface ClaimLoop {
  /** Starts looking, with a look at once. */
  start(): void;
  /** Look now (or, while a look is under way, once more right after it). Ignored while stopped. */
  wake(): void;
  /** Look at `at` (ms since the epoch) at the latest: a due time learnt outside a look. */
  wakeBy(at: number): void;
  /** Stops looking; resolves once the look under way (if any) has ended. */
  stop(): Promise<void>;
  readonly running: boolean;
}

/**
 * The one loop behind the run queue, builds, webhook deliveries and crons: one look at a time,
 * a wake during a look answered by one more look right after it, the next look timed by what the
 * last one found (at once, when work falls due, after `idleMs`, or after `busyMs` when work was
 * locked by another claimer), and failed looks backed off and logged once until a look works again.
 */
export function createClaimLoop(options: ClaimLoopOptions): ClaimLoop {
  const { name, logger, intervals } = options;
  const state = {
    running: false,
    looking: null as Promise<void> | null,
    again: false,
    timer: undefined as NodeJS.Timeout | undefined,
    timerAt: null as number | null,
    failures: 0,
  };

  function clearTimer(): void {
    clearTimeout(state.timer);
    state.timerAt = null;
  }

  function wakeBy(at: number): void {
    if (!state.running || (state.timerAt !== null && state.timerAt <= at)) return;
    clearTimeout(state.timer);
    state.timerAt = at;
    state.timer = setTimeout(wake, Math.max(0, Math.ceil(at - Date.now())));
    state.timer.unref();
  }

  function wake(): void {
    clearTimer();
    if (!state.running) return;
    if (state.looking) {
      state.again = true;
      return;
    }
    state.looking = lookOnce().finally(() => {
      state.looking = null;
      if (state.again) {
        state.again = false;
        wake();
      }
    });
  }

  async function lookOnce(): Promise<void> {
    let waitMs: number | null;
    try {
      const found = await options.look();
      if (state.failures > 0) logger.info({ failures: state.failures }, `${name}: working again`);
      state.failures = 0;
      waitMs = nextWait(found, intervals);
    } catch (error) {
      if (!state.running) return;
      state.failures++;
      waitMs = Math.min(intervals.backoffMs * 2 ** (state.failures - 1), intervals.maxBackoffMs);
      // Once per outage: a database down for an hour is one line, not one per look.
      if (state.failures === 1) logger.error({ err: error }, `${name}: a look failed; trying again with back-off`);
      else logger.debug({ err: error, failures: state.failures }, `${name}: a look failed again`);
    }
    if (waitMs === 0) state.again = true;
    else if (waitMs !== null) wakeBy(Date.now() + waitMs);
  }

  return {
    start() {
      if (state.running) return;
      state.running = true;
      state.failures = 0;
      wake();
    },
    wake,
    wakeBy,
    async stop() {
      state.running = false;
      state.again = false;
      clearTimer();
      await state.looking;
    },
    get running() {
      return state.running;
    },
  };
}

/** When the next look comes after one that found `found`: 0 at once, null when only a wake brings it. */
export function nextWait(found: Look, intervals: ClaimIntervals, now = Date.now()): number | null {
  if (found.kind === 'more') return 0;
  if (found.kind === 'full' || found.dueAt === null) return intervals.idleMs;
  const until = found.dueAt - now;
  const wait = until > 0 ? until : found.claimed > 0 ? 0 : intervals.busyMs;
  return intervals.idleMs === null ? wait : Math.min(wait, intervals.idleMs);
}

/**
 * The claimed work going on at once, up to `concurrency`: a loop's looks claim no more than `room`,
 * and the end of a job that found the loop full wakes it (`freed`).
 */
export class ClaimedJobs {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly concurrency: number,
    private readonly freed: () => void,
  ) {}

  get room(): number {
    return this.concurrency - this.inFlight.size;
  }

  get size(): number {
    return this.inFlight.size;
  }

  /** Tracks a job; it must handle (log) its own errors, a rejection here is swallowed. */
  add(job: Promise<unknown>): void {
    const tracked: Promise<void> = job.then(
      () => {},
      () => {},
    );
    this.inFlight.add(tracked);
    void tracked.then(() => {
      const wasFull = this.inFlight.size >= this.concurrency;
      this.inFlight.delete(tracked);
      if (wasFull) this.freed();
    });
  }

  /** Resolves once every job going on now has ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  /** The jobs going on now, to race against a grace period. */
  current(): Promise<void>[] {
    return [...this.inFlight];
  }
}
