/**
 * Paces the writes (and ends) of every event stream of the process: sinks with frames to send wait in one
 * queue, and each turn of the event loop writes at most TURN_BYTES to at most TURN_SINKS of them
 * before yielding with setImmediate. A burst to thousands of streams then costs many short turns,
 * between which every other request is served, instead of one turn of seconds.
 */

/** A turn's copying into socket buffers: about 16 ms at the 250 MB/s a loaded 2-core machine managed (bench fanout). */
const TURN_BYTES = 4 * 1024 * 1024;
/** Each sink's write costs a system call or two, whatever its size. */
const TURN_SINKS = 256;

export interface PacedSink {
  /** Writes queued frames, up to `budget` bytes; answers the bytes written. */
  flush(budget: number): number;
}

let ready: PacedSink[] = [];
let turnScheduled = false;
/** Writes made outside a turn since the last one (writeNowAllowed). */
let writtenNow = 0;

function runTurn(): void {
  turnScheduled = false;
  writtenNow = 0;
  const batch = ready;
  ready = [];
  let budget = TURN_BYTES;
  let index = 0;
  while (index < batch.length && index < TURN_SINKS && budget > 0) {
    budget -= (batch[index] as PacedSink).flush(budget);
    index++;
  }
  // Sinks not reached this turn go first in the next; those queued meanwhile follow.
  if (index < batch.length) ready = batch.slice(index).concat(ready);
  if (ready.length > 0) scheduleTurn();
}

function scheduleTurn(): void {
  if (turnScheduled) return;
  turnScheduled = true;
  setImmediate(runTurn);
}

/** Queues a sink for a turn; the caller makes sure a sink is queued once at a time. */
export function queueForWrite(sink: PacedSink): void {
  ready.push(sink);
  scheduleTurn();
}

/**
 * Whether a sink with nothing queued may write a frame at once, outside a turn: a quiet stream's
 * next frame (a model's first token) then leaves before the rest of the burst that carried it is
 * handled, instead of a turn later. At most TURN_SINKS such writes go between two turns, so a
 * burst to thousands of streams still goes in paced turns; the caller queues itself for the next
 * turn after writing, which sends what follows in the burst together.
 */
export function writeNowAllowed(): boolean {
  if (writtenNow >= TURN_SINKS) return false;
  writtenNow++;
  return true;
}
