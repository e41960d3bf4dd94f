import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createSignalHub, type SharedMessage, type SignalTransport } from '../../src/signals/hub.js';

/** A transport that keeps what it is given, and delivers what a test hands it as another instance's. */
function keptTransport() {
  const sent: SharedMessage[] = [];
  let deliver: ((message: SharedMessage) => void) | null = null;
  const transport: SignalTransport = {
    connect(handler) {
      deliver = handler;
    },
    send(message) {
      sent.push(message);
    },
  };
  return { transport, sent, fromElsewhere: (message: SharedMessage) => deliver?.(message) };
}

describe('the signal hub', () => {
  it('calls every subscriber of a signal, in order, and only those of that signal', () => {
    const heard: string[] = [];
    const hub = createSignalHub({
      logger: pino({ level: 'silent' }),
      subscribers: {
        stopRequested: [({ runId }) => heard.push(`first ${runId}`), ({ runId }) => heard.push(`second ${runId}`)],
        ended: [({ runId }) => heard.push(`ended ${runId}`)],
      },
    });
    hub.emit('stopRequested', { runId: 'run_a' });
    hub.emit('queued', {});
    expect(heard).toEqual(['first run_a', 'second run_a']);
    hub.emit('ended', { runId: 'run_b' });
    expect(heard).toEqual(['first run_a', 'second run_a', 'ended run_b']);
  });

  it('still calls the other subscribers when one throws, and logs it', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(line) });
    const heard: string[] = [];
    const hub = createSignalHub({
      logger,
      subscribers: {
        queued: [
          () => {
            throw new Error('a broken subscriber');
          },
          () => heard.push('queued'),
        ],
      },
    });
    hub.emit('queued', {});
    expect(heard).toEqual(['queued']);
    expect(lines.join('')).toContain('a broken subscriber');
  });

  it('sends shared signals to the other instances, keeps `ended` here, and hands theirs to the subscribers', () => {
    const { transport, sent, fromElsewhere } = keptTransport();
    const heard: string[] = [];
    const hub = createSignalHub({
      logger: pino({ level: 'silent' }),
      transport,
      subscribers: {
        threadReleased: [({ threadId }) => heard.push(`released ${threadId}`)],
        instanceStarted: [({ instanceId }) => heard.push(`hello ${instanceId}`)],
      },
    });
    hub.emit('threadReleased', { threadId: 'thr_a' });
    hub.emit('ended', { runId: 'run_a' });
    expect(sent).toEqual([{ name: 'threadReleased', payload: { threadId: 'thr_a' } }]);
    fromElsewhere({ name: 'instanceStarted', payload: { instanceId: 'ins_b' } });
    expect(heard).toEqual(['released thr_a', 'hello ins_b']);
    // What other instances send is not sent on again.
    expect(sent).toHaveLength(1);
  });
});
