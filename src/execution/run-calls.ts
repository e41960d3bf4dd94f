import type { Logger } from 'pino';

/** What a call answers: its result, or why it was refused or failed. */
export type CallAnswer = { result: unknown } | { error: string };

/**
 * Answers a run's calls (the `store.call` lines of docs/runner-protocol.md): `orgId` is the run's organization,
 * which the caller took from the run, never from the line.
 */
export type CallHandler = (orgId: string, fields: Record<string, unknown>) => Promise<CallAnswer>;

/** Calls of one run waiting for their answers at most; past it a call is refused at once. */
export const MAX_WAITING_CALLS = 16;
/** An answer's line at most: past it the call is refused (a search asks too many items at once). */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024;
const MAX_ID_LENGTH = 64;

/**
 * The calls of one run: each line runs for the run's organization, at most MAX_WAITING_CALLS at a time; its answer
 * goes back on the run's channel as `{"answer": {"id", "result"|"error"}}`, unless the run ended meanwhile.
 */
export class RunCalls {
  private waiting = 0;
  private closed = false;

  constructor(
    private readonly orgId: string,
    private readonly handler: CallHandler,
    private readonly send: (line: string) => void,
    private readonly logger: Logger,
  ) {}

  /** A `store.call` line's data, from the runner: anything in it may be hostile. */
  take(data: Record<string, unknown>): void {
    if (this.closed) return;
    const { id, ...fields } = data;
    if (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH) return; // nothing to answer it by
    if (this.waiting >= MAX_WAITING_CALLS) {
      this.answer(id, { error: `store call refused: more than ${MAX_WAITING_CALLS} calls of the run are waiting` });
      return;
    }
    this.waiting += 1;
    void this.handler(this.orgId, fields)
      .catch((error: unknown) => {
        this.logger.error({ err: error, op: fields.op }, "a run's store call failed");
        return { error: 'store call failed: crewd could not reach its database' };
      })
      .then((answer) => this.answer(id, answer))
      .finally(() => {
        this.waiting -= 1;
      });
  }

  /** The run ended: no more calls are taken, and none is answered. */
  close(): void {
    this.closed = true;
  }

  private answer(id: string, answer: CallAnswer): void {
    if (this.closed) return;
    let line = JSON.stringify({ answer: { id, ...answer } });
    if (Buffer.byteLength(line) > MAX_ANSWER_BYTES) {
      const error = `store call refused: its answer is over ${MAX_ANSWER_BYTES / (1024 * 1024)} MiB; ask fewer items`;
      line = JSON.stringify({ answer: { id, error } });
    }
    this.send(line);
  }
}
