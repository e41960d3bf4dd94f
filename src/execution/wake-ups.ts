import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { PgListener } from '../db/pg-listener.js';
import type { Database } from '../db/types.js';

export const WAKE_CHANNEL = 'crewd_wake';

/**
 * Tells the other instances on one PostgreSQL to act now rather than at their next tick:
 * `pending` (a run was queued: an instance with a free slot takes it), `stop:<run id>` (a run
 * one of them runs was canceled: its owner stops the process) or `hello:<instance id>` (an
 * instance started: the others announce their run events from now on). The tick stays the fallback for a missed
 * notification.
 */
export interface WakeUps {
  send(message: 'pending' | `hello:${string}` | `stop:${string}`): void;
  /** A queued run may start now (its thread was handed to it): this instance's queue and the others' look. */
  runsWaiting(): void;
  onPending(handler: () => void): void;
  onHello(handler: (instanceId: string) => void): void;
  onStop(handler: (runId: string) => void): void;
}

export function createWakeUps(db: Kysely<Database>, listener: PgListener | null, logger: Logger): WakeUps {
  let pending: () => void = () => {};
  let hello: (instanceId: string) => void = () => {};
  let stop: (runId: string) => void = () => {};
  listener?.on(WAKE_CHANNEL, (message) => {
    if (message === 'pending') pending();
    else if (message.startsWith('hello:')) hello(message.slice('hello:'.length));
    else if (message.startsWith('stop:')) stop(message.slice('stop:'.length));
  });
  const send: WakeUps['send'] = (message) => {
    if (!listener) return;
    sql`select pg_notify(${WAKE_CHANNEL}, ${message})`.execute(db).catch((error: unknown) => {
      logger.debug({ err: error }, 'wake-up notification not sent; the other instances act on their tick');
    });
  };
  return {
    send,
    runsWaiting() {
      pending();
      send('pending');
    },
    onPending(handler) {
      pending = handler;
    },
    onHello(handler) {
      hello = handler;
    },
    onStop(handler) {
      stop = handler;
    },
  };
}
