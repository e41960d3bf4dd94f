import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/types.js';
import type { LiveEvent, LiveSubscription, RunEventFeed, StreamEnd } from '../events/types.js';
import * as repo from '../run-record/repository.js';
import { queueForWrite } from './socket-writer.js';
import { CLOSED_SINK, MAX_CLIENT_BACKLOG_BYTES, type StreamSink } from './stream-sink.js';
import { runStreamSource, type StreamRecord, type StreamSource } from './stream-source.js';

export interface StreamTimings {
  /** `: keepalive` comment interval (CONTRACTS §7: 15 s). */
  keepaliveMs: number;
  /** Fallback poll of the stored run when live events cannot be had (SPEC §6: 2 s). */
  pollMs: number;
}

export interface StreamOptions {
  db: Kysely<Database>;
  feed: RunEventFeed;
  instanceId: string;
  timings: StreamTimings;
  lifetimeMs: number;
  logger: Logger;
  /** Told of each event written to the client (for metrics). */
  relayed?: () => void;
}

const REPLAY_PAGE = 1000;

/** The `complete` message of an end, serialised once for every stream that sends it. */
const completeMessages = new WeakMap<StreamEnd, string>();
function completeJson(end: StreamEnd): string {
  let json = completeMessages.get(end);
  if (json === undefined) {
    json = JSON.stringify({ type: 'complete', ...end });
    completeMessages.set(end, json);
  }
  return json;
}

/**
 * One client's view of a run (CONTRACTS §7): stored events after its last id, then live ones,
 * deduplicated by sequence number, then one `complete`. Without a live feed it polls the stored
 * run every 2 s and sends heartbeats. Resolves `done` when the stream is over.
 */
export class RunStream {
  private lastSent: number;
  /** Whether the client's event numbered `lastSent` was this instance's live event (not read from the store). */
  private lastSentLive = false;
  private mode: 'replaying' | 'live' | 'polling' | 'closed' = 'replaying';
  private buffered: LiveEvent[] = [];
  private bufferedBytes = 0;
  private subscription: LiveSubscription | null = null;
  private timers: NodeJS.Timeout[] = [];
  private heardSinceTick = false;
  private checking = false;
  private row: StreamRecord | null = null;
  private sink: StreamSink = CLOSED_SINK;
  private resolveDone!: () => void;
  readonly done = new Promise<void>((resolve) => {
    this.resolveDone = resolve;
  });

  constructor(
    private readonly options: StreamOptions,
    private readonly orgId: string,
    private readonly runId: string,
    private readonly resumeAfter: number | null,
    private readonly source: StreamSource = runStreamSource,
  ) {
    this.lastSent = resumeAfter ?? 0;
  }

  /**
   * Subscribes to live events, then reads the run (from the executor when the run is going on
   * here, else from the store), so nothing falls between the two. Throws 404 for a run unknown
   * to the organization, before any response has started.
   */
  async prepare(): Promise<void> {
    this.subscription = this.options.feed.subscribe(
      this.runId,
      (event) => this.onLive(event),
      () => this.onRemoteLost(),
    );
    const live = this.subscription?.live;
    if (live) {
      if (live.orgId === this.orgId) return;
      this.finish();
      throw this.source.notFound();
    }
    try {
      this.row = (await this.source.find(this.options.db, this.orgId, this.runId)) ?? null;
    } finally {
      if (!this.row) this.finish();
    }
    if (!this.row) throw this.source.notFound();
  }

  async start(sink: StreamSink): Promise<void> {
    const { timings, lifetimeMs } = this.options;
    this.sink = sink;
    const row = this.row;
    const live = this.subscription?.live ?? null;
    if (this.mode === 'closed' || !(row || live)) return;
    try {
      // SPEC §6 rule 1: a finished run, asked without a resume point, gets its `complete` at once.
      if (row?.terminal && this.resumeAfter === null) return this.complete(row.end);
      this.every(timings.keepaliveMs, () => this.keepalive());
      const lifetime = setTimeout(() => this.timeout(), lifetimeMs);
      lifetime.unref();
      this.timers.push(lifetime);

      const elsewhere = row?.running === true && row.instanceId !== this.options.instanceId;
      if (!this.subscription || (elsewhere && !this.subscription.remote)) return await this.startPolling();

      // A run going on here keeps its recent events in memory: when they reach back far enough,
      // the store has nothing to add.
      const backlog = live?.backlog ?? [];
      const first = backlog[0];
      if (!live || (first !== undefined && first.seq > this.lastSent + 1)) await this.replayStored();
      if (row?.terminal) return await this.completeFromStore(row.end);
      for (const event of backlog) {
        this.deliver(event);
        if (this.sink.backlogged()) await this.sink.drained();
      }
      // Events of another instance may leave gaps only the store can fill.
      if (this.buffered.some((event) => event.remote)) return await this.catchUp();
      for (const event of this.buffered) this.deliver(event);
      this.buffered = [];
      this.bufferedBytes = 0;
      if (this.mode === 'replaying') this.mode = 'live';
    } catch (error) {
      this.fault(error);
    }
  }

  /** Ends the stream from outside: the client left, or the service is shutting down. */
  close(notice?: string): void {
    if (this.mode === 'closed') return;
    if (notice) this.sink.sendUntracked(JSON.stringify({ type: 'error', message: notice }));
    this.finish();
  }

  private onLive(event: LiveEvent): void {
    this.heardSinceTick = true;
    if (this.mode === 'replaying') {
      this.buffered.push(event);
      this.bufferedBytes += event.json.length;
      // Still catching up on stored events while live ones pile up: too far behind.
      if (this.bufferedBytes > MAX_CLIENT_BACKLOG_BYTES) this.finish(true);
    } else if (this.mode === 'live') {
      // Another instance announces events once stored: a gap, an event too big to carry or the
      // run's end (whose last events were stored with it) is read from the store.
      if (event.remote && (event.end || !event.json || event.seq > this.lastSent + 1)) {
        this.buffered.push(event);
        void this.catchUp();
      } else this.deliver(event);
    }
  }

  /** Reads the store up to the buffered events of another instance, then delivers them and goes live. */
  private async catchUp(): Promise<void> {
    this.mode = 'replaying';
    try {
      await this.replayStored();
      for (let event = this.buffered.shift(); event; event = this.buffered.shift()) {
        if ((this.mode as string) === 'closed') return;
        if (event.end && event.remote) {
          const row = await this.source.findById(this.options.db, this.runId);
          return await this.completeFromStore(row?.terminal ? row.end : event.end, event.seq);
        }
        if (event.remote && event.seq > this.lastSent && (!event.json || event.seq > this.lastSent + 1)) {
          await this.replayStored();
        }
        this.deliver(event);
      }
      this.bufferedBytes = 0;
      if ((this.mode as string) === 'replaying') this.mode = 'live';
    } catch (error) {
      this.fault(error);
    }
  }

  /** The feed of other instances' runs went down: a run not going on here is polled from now on. */
  private onRemoteLost(): void {
    if (this.mode !== 'live' && this.mode !== 'replaying') return;
    if (this.subscription?.live) return;
    void this.startPolling().catch((error: unknown) => this.fault(error));
  }

  /** Sends an event the client does not have yet; `fromStore`: it was read from the store. */
  private deliver(event: LiveEvent, fromStore = false): void {
    if (this.mode === 'closed') return;
    const missed = event.end !== undefined && this.missedFinal(event.seq);
    if ((event.seq > this.lastSent || missed) && event.json) {
      if (!this.sink.send(event)) {
        this.finish();
        return;
      }
      this.options.relayed?.();
      this.lastSent = Math.max(this.lastSent, event.seq);
      this.lastSentLive = !event.end && !fromStore && !event.remote;
    }
    // A run's end reaches all its streams at once: each completes in a paced turn, not all in this one.
    if (event.end) {
      const end = event.end;
      queueForWrite({
        flush: () => {
          this.complete(end);
          return 0;
        },
      });
    }
  }

  private async replayStored(): Promise<void> {
    for (;;) {
      const rows = await repo.listEventsAfter(this.options.db, this.runId, this.lastSent, REPLAY_PAGE);
      for (const row of rows) {
        if (this.mode === 'closed') return;
        this.deliver({ seq: row.seq, json: JSON.stringify({ type: row.type, data: row.data }) }, true);
        if (this.sink.backlogged()) await this.sink.drained();
      }
      if (rows.length < REPLAY_PAGE) return;
    }
  }

  /** SPEC §6 fallback: the stored record every poll interval, a heartbeat while it runs. */
  private async startPolling(): Promise<void> {
    this.subscription?.close();
    this.subscription = null;
    this.buffered = [];
    this.mode = 'polling';
    await this.poll();
    this.every(this.options.timings.pollMs, () => this.poll());
  }

  private async poll(): Promise<void> {
    if (this.mode !== 'polling' || this.checking) return;
    this.checking = true;
    try {
      const row = await this.source.findById(this.options.db, this.runId);
      if (!row) return this.fail(this.source.notFound().message);
      await this.replayStored();
      if (this.mode !== 'polling') return;
      if (row.terminal) return await this.completeFromStore(row.end);
      this.sink.sendUntracked(JSON.stringify({ type: 'heartbeat', status: row.status }));
    } catch (error) {
      this.fault(error);
    } finally {
      this.checking = false;
    }
  }

  private keepalive(): void {
    if (this.mode === 'closed') return;
    this.sink.comment('keepalive');
    if (this.mode === 'live' && !this.heardSinceTick) void this.checkQuietRun();
    this.heardSinceTick = false;
  }

  /** A quiet live stream looks at the stored run, in case its end or its move elsewhere was missed. */
  private async checkQuietRun(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const row = await this.source.findById(this.options.db, this.runId);
      if (this.mode !== 'live') return;
      if (!row) return this.fail(this.source.notFound().message);
      if (row.terminal) {
        this.mode = 'replaying';
        await this.replayStored();
        return await this.completeFromStore(row.end);
      }
      if (row.running && row.instanceId !== this.options.instanceId && !this.subscription?.remote) {
        this.checking = false;
        await this.startPolling();
      }
    } catch (error) {
      this.fault(error);
    } finally {
      this.checking = false;
    }
  }

  private timeout(): void {
    if (this.mode === 'closed') return;
    const seconds = Math.round(this.options.lifetimeMs / 100) / 10;
    this.sink.sendUntracked(
      JSON.stringify({
        type: 'timeout',
        message: `Event stream closed after ${seconds} seconds; reconnect with Last-Event-ID to continue`,
      }),
    );
    this.finish();
  }

  /**
   * Whether the client lacks the run's final event numbered `seq`, at or below `lastSent`: another
   * instance ended the run while events its owner (this instance) had published were not stored yet,
   * so the end took the number of an event this stream sent live. A client resuming past the final
   * event gets the events after its id and `complete` (CONTRACTS §7), not the final event.
   */
  private missedFinal(seq: number): boolean {
    return seq <= this.lastSent && this.lastSentLive;
  }

  /**
   * Completes the stream of a run whose end was read from the store; first sends the run's final
   * event should the client lack it (`missedFinal`): a stream never drops a final event, though it
   * may come with a number at or below the last one the client got. `finalSeq`, when known, spares
   * the look at the store in the common case.
   */
  private async completeFromStore(end: StreamEnd, finalSeq?: number): Promise<void> {
    if (this.lastSentLive && (finalSeq === undefined || this.missedFinal(finalSeq))) {
      const final = await this.source.finalEvent?.(this.options.db, this.runId);
      if (this.mode === 'closed') return;
      if (final && this.missedFinal(final.seq)) {
        if (!this.sink.send(final)) return this.finish();
        this.options.relayed?.();
        this.lastSentLive = false;
      }
    }
    this.complete(end);
  }

  private complete(end: StreamEnd): void {
    if (this.mode === 'closed') return;
    this.sink.sendUntracked(completeJson(end));
    this.finish();
  }

  private fail(message: string): void {
    if (this.mode === 'closed') return;
    this.sink.sendUntracked(JSON.stringify({ type: 'error', message }));
    this.finish();
  }

  private fault(error: unknown): void {
    this.options.logger.error({ err: error, runId: this.runId }, 'event stream failed');
    this.fail('The event stream failed: the run could not be read; reconnect with Last-Event-ID');
  }

  private every(ms: number, task: () => void | Promise<void>): void {
    const timer = setInterval(() => void task(), ms);
    timer.unref();
    this.timers.push(timer);
  }

  private finish(abort = false): void {
    if (this.mode === 'closed') return;
    this.mode = 'closed';
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    this.subscription?.close();
    this.subscription = null;
    this.buffered = [];
    this.bufferedBytes = 0;
    if (abort) this.sink.abort();
    else this.sink.close();
    this.resolveDone();
  }
}
