import type { Principal } from '../auth/plugin.js';
import type { LiveEvent, RunEnd } from '../events/types.js';
import type { StreamSink } from '../streams/stream-sink.js';
import type { RunStreams } from '../streams/streams.js';

/** A run's event as the stream carries it. */
export interface RunEvent {
  type: string;
  data: unknown;
}

/** How following a run stopped: its end, or the stream ended first (shutdown, stream lifetime) and why. */
export type Followed = { end: RunEnd } | { lost: string };

/**
 * Follows a run through the same event stream GET /v1/runs/:id/events serves (stored events, then live ones, then
 * its end), handing each event to `onEvent`. `stop` ends the stream early (the call's wait is over).
 */
export function followRun(
  streams: RunStreams,
  principal: Principal,
  runId: string,
  onEvent: (event: RunEvent) => void,
): { followed: Promise<Followed>; stop: () => void } {
  let settle: (followed: Followed) => void = () => {};
  const followed = new Promise<Followed>((resolve) => {
    settle = resolve;
  });
  const stream = streams.open(principal, runId, null);
  const sink: StreamSink = {
    send(event: LiveEvent) {
      onEvent(JSON.parse(event.json) as RunEvent);
      return true;
    },
    sendUntracked(json: string) {
      const message = JSON.parse(json) as { type: string; message?: string } & Partial<RunEnd>;
      if (message.type === 'complete') {
        settle({
          end: { status: message.status, output: message.output ?? null, error: message.error ?? null } as RunEnd,
        });
      } else if (message.type === 'error' || message.type === 'timeout') {
        settle({ lost: message.message ?? message.type });
      }
    },
    comment: () => {},
    close: () => settle({ lost: 'the event stream ended' }),
    abort: () => settle({ lost: 'the event stream fell behind' }),
    backlogged: () => false,
    drained: async () => {},
  };
  void stream
    .prepare()
    .then(() => stream.start(sink))
    .catch((error: unknown) => settle({ lost: (error as Error).message }));
  return { followed, stop: () => stream.close() };
}
