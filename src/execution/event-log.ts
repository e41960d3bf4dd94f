import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { refusedAsData } from '../db/sqlstate.js';
import type { Database } from '../db/types.js';
import type { LocalEventBus } from '../events/bus.js';
import type { LiveEvent } from '../events/types.js';
import { RUN_LIMITS } from '../run-limits.js';
import * as repo from '../run-record/repository.js';

/**
 * How a batch is stored; answers how many of its rows were. Fewer: the run ended meanwhile (ended by
 * someone else, its end numbered after what was stored), and the rest are late events, dropped.
 */
export type StoreEvents = (db: Kysely<Database>, rows: repo.EventRow[]) => Promise<number>;

/** Stores every row whose number is free, and takes the batch as stored (a build's log: nothing ends it from elsewhere). */
const storeAll: StoreEvents = async (db, rows) => {
  await repo.insertEvents(db, rows);
  return rows.length;
};

interface StoredEvent extends LiveEvent {
  type: string;
  data: string;
}

/** An event that arrived while the log was handed over: not numbered yet. */
interface HeldEvent {
  type: string;
  data: string;
  json: string;
}

/**
 * The log's events handed to an end made here by someone else than the run's owner (a run displacing
 * it): what is not stored yet, and the final event's number, after every number the log gave.
 */
export interface HandedOver {
  unstored: repo.EventRow[];
  finalSeq: number;
  /**
   * The end committed (true): the log is closed, and what arrived meanwhile is dropped. It did not
   * (false, its transaction rolled back): the log numbers what arrived meanwhile and stores on.
   */
  release(ended: boolean): void;
}

/** Most rows one insert carries; a fast runner's backlog goes out in a few statements. */
const MAX_BATCH = 500;
/** How long events may wait to be stored together; streams get them at once regardless. */
const FLUSH_DELAY_MS = 200;
/** While the database is away, unstored events are kept up to this much per run; older ones go past it. */
const MAX_UNSTORED_BYTES = 16 * 1024 * 1024;
/** Attempts at a batch the database refuses as data before it is dropped. */
const REFUSED_ATTEMPTS = 3;
/** The recent events kept in memory, so a stream opening on a running run needs no replay query. */
const RECENT_EVENTS = 1000;
const RECENT_BYTES = 1024 * 1024;

/**
 * The events of one running run. This instance runs it, so it numbers events in memory
 * and hands each to live streams at once; storing follows in batches, at most one insert in
 * flight and each batch gathering what arrived in the last moments, so a runner writing an
 * event every 2 ms costs a few statements a second. What is still unstored when the run ends
 * goes into the run's ending statement.
 */
export class RunEventLog {
  private nextSeq: number;
  private runnerCount = 0;
  private limitNoticed = false;
  /** Not yet stored (including a batch in flight), in order. */
  private pending: StoredEvent[] = [];
  private pendingBytes = 0;
  private inFlight = 0;
  /** Failed attempts in a row at storing the first pending batch. */
  private failures = 0;
  /** The latest events, stored or not, in order. */
  private recent: StoredEvent[] = [];
  private recentBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private closed = false;
  /** Handed over (`handOver`) until released: events wait here unnumbered, and nothing is stored. */
  private held: { events: HeldEvent[]; released: Promise<void> } | null = null;

  constructor(
    private readonly runId: string,
    lastSeq: number,
    private readonly db: Kysely<Database>,
    private readonly bus: LocalEventBus,
    private readonly logger: Logger,
    /**
     * Events the runner (or build) may write here; later ones are dropped, and one `log` event says
     * so. Null: the log drops none, and its owner enforces a limit of its own on `runnerEvents`
     * (a run fails past RUN_MAX_EVENTS).
     */
    private readonly maxEvents: number | null = RUN_LIMITS.maxEventsPerRun,
    /** A run's log stores with `repo.insertEventsWhileRunning`, so none of its events lands after an end made elsewhere. */
    private readonly store: StoreEvents = storeAll,
  ) {
    this.nextSeq = lastSeq + 1;
  }

  /** The events the runner (or build) wrote here: the one count of them. */
  get runnerEvents(): number {
    return this.runnerCount;
  }

  /** An event written by the runner, counted against the log's limit; answers its size in bytes (0: dropped). */
  appendFromRunner(type: string, data: Record<string, unknown>): number {
    if (this.closed) return 0;
    if (this.maxEvents !== null && this.runnerCount >= this.maxEvents) {
      if (!this.limitNoticed) {
        this.limitNoticed = true;
        this.append('log', {
          message: `Event limit of ${this.maxEvents} events reached; further events are dropped`,
          limit: this.maxEvents,
        });
      }
      return 0;
    }
    this.runnerCount++;
    return this.append(type, data);
  }

  /** An event of the service itself (`run.started`); never dropped. Answers its size in bytes. */
  append(type: string, data: Record<string, unknown>): number {
    if (this.closed) return 0;
    // The data serialised once, for the store and inside what streams send: `{type, data}` as JSON.stringify writes it.
    const dataJson = JSON.stringify(data);
    const json = `{"type":${JSON.stringify(type)},"data":${dataJson}}`;
    if (this.held) this.held.events.push({ type, data: dataJson, json });
    else this.number({ type, data: dataJson, json });
    return json.length;
  }

  /** Numbers an event, hands it to live streams and queues it to be stored. */
  private number({ type, data, json }: HeldEvent): void {
    const event: StoredEvent = { seq: this.nextSeq++, json, type, data };
    this.pending.push(event);
    this.pendingBytes += event.json.length;
    this.remember(event);
    this.bus.publish(this.runId, event);
    if (this.pending.length - this.inFlight >= MAX_BATCH) this.flushSoon(0);
    else this.flushSoon(FLUSH_DELAY_MS);
  }

  /**
   * The latest events handed to streams (up to RECENT_EVENTS of them), and every event not stored
   * yet, in order: a new stream reads the rest from the store, so none may fall between the two.
   */
  backlog(): LiveEvent[] {
    const first = this.recent[0]?.seq ?? Number.POSITIVE_INFINITY;
    const unstoredBefore = this.pending.filter((event) => event.seq < first);
    return unstoredBefore.length > 0 ? [...unstoredBefore, ...this.recent] : this.recent.slice();
  }

  /**
   * Stops taking events, waits for the insert in flight, and hands over the events not yet
   * stored (to go into the run's ending statement) with the next free sequence number. They stay
   * in the backlog: a stream that opens before that statement commits reads none of them from the
   * store, so it must get them here.
   */
  async close(): Promise<{ unstored: repo.EventRow[]; nextSeq: number }> {
    while (this.held) await this.held.released;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.flushing) await this.flushing;
    return { unstored: this.pending.map((event) => this.row(event)), nextSeq: this.nextSeq };
  }

  /**
   * Hands the log over to an end someone else makes here, without waiting for the insert in flight
   * (its batch is among the unstored events: it either commits before the end takes the run's row,
   * or finds the run ended). Until `release` the log numbers, publishes and stores nothing, so the
   * final event comes after every event a stream got. Null while it is handed over already.
   */
  handOver(): HandedOver | null {
    if (this.held) return null;
    const unstored = this.pending.map((event) => this.row(event));
    const finalSeq = this.nextSeq;
    // Closed by its owner's own end: that end stores the same events, and only one of the two ends the run.
    if (this.closed) return { unstored, finalSeq, release: () => {} };
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    let released = () => {};
    const held = { events: [] as HeldEvent[], released: new Promise<void>((resolve) => (released = resolve)) };
    this.held = held;
    return {
      unstored,
      finalSeq,
      release: (ended) => {
        if (this.held !== held) return;
        this.held = null;
        if (ended) this.closed = true;
        else {
          for (const event of held.events) this.number(event);
          if (this.pending.length > 0) this.flushSoon(FLUSH_DELAY_MS);
        }
        released();
      },
    };
  }

  private remember(event: StoredEvent): void {
    this.recent.push(event);
    this.recentBytes += event.json.length;
    while (this.recent.length > RECENT_EVENTS || (this.recentBytes > RECENT_BYTES && this.recent.length > 1)) {
      this.recentBytes -= (this.recent.shift() as StoredEvent).json.length;
    }
  }

  private row(event: StoredEvent): repo.EventRow {
    return { run_id: this.runId, seq: event.seq, type: event.type, data: event.data };
  }

  private flushSoon(delayMs: number): void {
    if (this.flushing || this.closed || this.held) return;
    if (this.timer && delayMs > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      const flushing = this.flush().finally(() => {
        this.flushing = null;
        if (this.pending.length > 0) this.flushSoon(FLUSH_DELAY_MS);
      });
      this.flushing = flushing;
    }, delayMs);
  }

  private dropFirst(count: number): void {
    for (const event of this.pending.splice(0, count)) this.pendingBytes -= event.json.length;
  }

  /**
   * Stores pending events in batches; stops early once closed or handed over (the rest go with the run's end).
   * While the database is away the events wait, within MAX_UNSTORED_BYTES, and are stored once
   * it is back; a batch it refuses as data is dropped after a few attempts.
   */
  private async flush(): Promise<void> {
    while (this.pending.length > 0 && !this.closed && !this.held) {
      const batch = this.pending.slice(0, MAX_BATCH);
      this.inFlight = batch.length;
      try {
        const stored = await this.store(
          this.db,
          batch.map((event) => this.row(event)),
        );
        this.dropFirst(batch.length);
        this.failures = 0;
        // A batch refused because the run ended is not announced: its numbers may belong to other events.
        if (stored === batch.length) this.bus.stored?.(this.runId, batch);
      } catch (error) {
        this.failures++;
        this.logger.error({ err: error, runId: this.runId, failures: this.failures }, 'storing run events failed');
        const refused = refusedAsData(error) && this.failures >= REFUSED_ATTEMPTS;
        if (refused || this.pendingBytes > MAX_UNSTORED_BYTES) {
          this.dropFirst(batch.length);
          this.failures = 0;
        } else {
          await new Promise((resolve) => setTimeout(resolve, Math.min(200 * this.failures, 2000)));
        }
      } finally {
        this.inFlight = 0;
      }
      // Under a steady stream of events, let the next batch gather instead of inserting one by one.
      if (this.pending.length < MAX_BATCH) break;
    }
  }
}
