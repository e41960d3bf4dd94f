import { unpack } from './msgpack.js';

/** The format the Python runner keeps LangGraph's checkpoint in (runners/python/crewd_runner/langgraph_checkpoint.py). */
const FORMAT = 'crewd.langgraph.v1';
const TRIGGER = 'branch:to:';
const START = '__start__';

type Versions = Record<string, unknown>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** LangGraph's channel versions: numbers, or zero-padded strings (both savers' kinds) — either compares in order. */
function newer(version: unknown, seen: unknown): boolean {
  if (seen === undefined || seen === null) return true;
  if (typeof version === 'number' && typeof seen === 'number') return version > seen;
  return String(version) > String(seen);
}

/** One value of the root checkpoint the runner wrote (`checkpoint` or `metadata`), read without constructing anything. */
function rootValue(stored: unknown, field: 'checkpoint' | 'metadata'): Record<string, unknown> | null {
  if (!isObject(stored) || stored.format !== FORMAT || !Array.isArray(stored.checkpoints)) return null;
  const root = stored.checkpoints.find((entry: unknown) => isObject(entry) && entry.ns === '');
  if (!isObject(root) || !isObject(root[field])) return null;
  const { type, data } = root[field] as Record<string, unknown>;
  if (type !== 'msgpack' || typeof data !== 'string') return null;
  const decoded = unpack(Buffer.from(data, 'base64'));
  return isObject(decoded) ? decoded : null;
}

const rootCheckpoint = (stored: unknown) => rootValue(stored, 'checkpoint');

/**
 * LangGraph's `next` of the thread's current state as the runner read it when it wrote the
 * checkpoint (`graph.get_state(...).next`: a node that already finished in a step stopped at
 * another's interrupt is not listed), or null when the runner did not record it.
 */
export function liveNext(stored: unknown): string[] | null {
  if (!isObject(stored) || stored.format !== FORMAT || !Array.isArray(stored.next)) return null;
  return stored.next.every((name) => typeof name === 'string') ? (stored.next as string[]) : null;
}

/** `source` and `step` of LangGraph's own checkpoint metadata (`loop`, `input`, `update`, `fork`), when readable. */
export function checkpointSource(stored: unknown): { source: string; step: number } | null {
  let metadata: Record<string, unknown> | null;
  try {
    metadata = rootValue(stored, 'metadata');
  } catch {
    return null;
  }
  if (!metadata || typeof metadata.source !== 'string' || typeof metadata.step !== 'number') return null;
  return { source: metadata.source, step: metadata.step };
}

/**
 * The nodes LangGraph runs next from this checkpoint, as its own `StateSnapshot.next` names them in
 * the thread's history (`get_state_history`, and `get_state` at a checkpoint id): a node whose trigger channel (`branch:to:<node>`, or `__start__`) holds a value of a version the
 * node has not seen (LangGraph's own rule for triggering a node).
 * Null when the value is not a root checkpoint the runner wrote (no LangGraph graph, or unreadable).
 */
export function nextNodes(stored: unknown): string[] | null {
  let checkpoint: Record<string, unknown> | null;
  try {
    checkpoint = rootCheckpoint(stored);
  } catch {
    return null;
  }
  if (!checkpoint || !isObject(checkpoint.channel_versions)) return null;
  const versions = checkpoint.channel_versions as Versions;
  const seenBy = (isObject(checkpoint.versions_seen) ? checkpoint.versions_seen : {}) as Record<string, unknown>;
  const available = isObject(checkpoint.channel_values) ? checkpoint.channel_values : {};
  const next: string[] = [];
  for (const [channel, version] of Object.entries(versions)) {
    const node = channel.startsWith(TRIGGER) ? channel.slice(TRIGGER.length) : channel === START ? START : null;
    // A trigger consumed by its node is gone from the values, though its version stays newer.
    if (node === null || !(channel in available)) continue;
    const seen = seenBy[node];
    if (newer(version, isObject(seen) ? seen[channel] : undefined)) next.push(node);
  }
  return next;
}
