import type { LiveEvent } from '../events/types.js';
import type { SseFraming } from '../streams/sse-sink.js';

/** The runner's event for one chunk of a stream mode (runners/python/crewd_runner/stream_modes.py). */
export const CHUNK_EVENT = 'langgraph.chunk';

/** The modes a client may ask for (CONTRACTS §14). */
export const STREAM_MODES = [
  'values',
  'updates',
  'custom',
  'messages',
  'messages-tuple',
  'events',
  'debug',
  'tasks',
  'checkpoints',
] as const;
export type StreamMode = (typeof STREAM_MODES)[number];

/** The mode a stored chunk answers: the legacy `messages` mode's three events belong to `messages`. */
function requestedModeOf(chunkMode: string): string {
  return chunkMode.startsWith('messages/') ? 'messages' : chunkMode;
}

/** The SSE event name of a chunk: `messages-tuple` chunks are sent as `messages`; a subgraph's carry its namespace. */
function eventNameOf(chunkMode: string, ns: unknown): string {
  const name = chunkMode === 'messages-tuple' ? 'messages' : chunkMode;
  return Array.isArray(ns) && ns.length > 0 ? `${name}|${ns.join('|')}` : name;
}

const frame = (event: string, data: string, id: number | null) =>
  `event: ${event}\ndata: ${data}\n${id === null ? '' : `id: ${id}\n`}\n`;

/** `"ValueError: bad input"` as the SDKs read a run's error: `{error: "ValueError", message: "bad input"}`. */
export function errorOf(message: string): { error: string; message: string } {
  const match = /^([A-Za-z_][\w.]*): ([\s\S]*)$/.exec(message);
  return match ? { error: match[1] as string, message: match[2] as string } : { error: 'Error', message };
}

interface StoredEvent {
  type: string;
  data: Record<string, unknown>;
}

/**
 * The frame of a stored event in the Agent Server's terms, or null when it has none: a chunk of a
 * mode the client asked for, a `/v1` run's node updates and custom writes, a failed run's error.
 */
function frameOfEvent(event: StoredEvent, seq: number, modes: ReadonlySet<string> | null): string | null {
  const { type, data } = event;
  const wanted = (mode: string) => modes === null || modes.has(mode);
  switch (type) {
    case CHUNK_EVENT: {
      const mode = String(data.mode);
      if (!wanted(requestedModeOf(mode))) return null;
      return frame(eventNameOf(mode, data.ns), JSON.stringify(data.data ?? null), seq);
    }
    // A run started through /v1 streams crewd's own events (CONTRACTS §9): the nearest modes.
    case 'node.completed':
      return wanted('updates') ? frame('updates', JSON.stringify({ [String(data.node)]: data.update }), seq) : null;
    case 'custom':
      return wanted('custom') ? frame('custom', JSON.stringify(data), seq) : null;
    case 'run.failed':
      return frame('error', JSON.stringify(errorOf(String(data.error ?? 'Run failed'))), seq);
    default:
      return null;
  }
}

/**
 * One client's framing of a run's event log as the Agent Server streams it (CONTRACTS §14): first
 * `metadata` `{run_id, attempt}` (not again on a resume), then the chunks of the client's modes
 * (all the run streamed when it names none), `error` for a failed run, and `end` once the run is
 * over. Every event carries its sequence number as `id:`; `metadata` is 0, so a resume from it
 * replays everything.
 */
export function agentServerFraming(runId: string, modes: readonly string[] | null, resumed: boolean): SseFraming {
  const wanted = modes && modes.length > 0 ? new Set(modes) : null;
  let lastSeq = 0;
  return {
    opening: () => (resumed ? null : frame('metadata', JSON.stringify({ run_id: runId, attempt: 1 }), 0)),
    event(event: LiveEvent) {
      lastSeq = event.seq;
      return frameOfEvent(JSON.parse(event.json) as StoredEvent, event.seq, wanted);
    },
    untracked(json: string) {
      const message = JSON.parse(json) as { type?: string };
      // A stream cut short (its lifetime, a fault, a shutdown) just closes: the SDK resumes with Last-Event-ID.
      return message.type === 'complete' ? frame('end', 'null', lastSeq) : null;
    },
  };
}
