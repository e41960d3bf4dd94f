import type { Logger } from 'pino';

/**
 * What parts of a run tell each other, by name, with what each carries. The hub is the one way
 * these travel: whoever emits one does not know who acts on it.
 */
export interface SignalMap {
  /** A run was queued as pending: a run queue with a free slot (here or on another instance) takes it. */
  queued: Record<string, never>;
  /** A thread was handed to its next queued run, or a thread run's process is gone: that run may start. */
  threadReleased: { threadId: string };
  /** A run ended in the database while its process may still run: its owner stops the process. */
  stopRequested: { runId: string };
  /** A run's end committed (before it is published to live streams). */
  ended: { runId: string };
  /** An instance started: the others announce their run events from now on. */
  instanceStarted: { instanceId: string };
}

export type SignalName = keyof SignalMap;
export type Subscriber<K extends SignalName> = (payload: SignalMap[K]) => void;
export type Subscribers = { [K in SignalName]?: readonly Subscriber<K>[] };

/** The signals other instances hear too; the rest stay in the process that emitted them. */
export const SHARED_SIGNALS = ['queued', 'threadReleased', 'stopRequested', 'instanceStarted'] as const;
export type SharedSignal = (typeof SHARED_SIGNALS)[number];
export const isShared = (name: SignalName): name is SharedSignal =>
  (SHARED_SIGNALS as readonly string[]).includes(name);

/** A signal as it crosses to other instances. */
export type SharedMessage = { [K in SharedSignal]: { name: K; payload: SignalMap[K] } }[SharedSignal];

/**
 * Carries shared signals to other instances and theirs back to this one (src/signals/pg-transport.ts).
 * `deliver` is given once, when the hub is made.
 */
export interface SignalTransport {
  connect(deliver: (message: SharedMessage) => void): void;
  send(message: SharedMessage): void;
}

/** What emitters see of the hub. */
export interface Signals {
  emit<K extends SignalName>(name: K, payload: SignalMap[K]): void;
}

/**
 * One typed hub, made in the composition root with every subscriber it will ever call. Emitting
 * calls this process's subscribers at once, in order (a throwing one is logged and the rest still
 * run), then sends a shared signal to the other instances, whose hubs call their own subscribers.
 */
export function createSignalHub(options: {
  subscribers: Subscribers;
  transport?: SignalTransport | null | undefined;
  logger: Logger;
}): Signals {
  const { subscribers, transport, logger } = options;

  function call<K extends SignalName>(name: K, payload: SignalMap[K]): void {
    const list = (subscribers[name] ?? []) as readonly Subscriber<K>[];
    for (const subscriber of list) {
      try {
        subscriber(payload);
      } catch (error) {
        logger.error({ err: error, signal: name }, 'a signal subscriber failed');
      }
    }
  }

  transport?.connect((message) => call(message.name, message.payload));

  return {
    emit(name, payload) {
      call(name, payload);
      if (transport && isShared(name)) transport.send({ name, payload } as SharedMessage);
    },
  };
}
