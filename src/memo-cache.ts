/** How much a cache may hold and for how long. */
export interface MemoLimits {
  maxEntries: number;
  /** Sum of the entries' sizes, as given to `set`. */
  maxSize: number;
  ttlMs: number;
}

/**
 * An in-process cache of values read from the database, dropped whole when they change.
 * `generation` closes the race of a read that began before a change and ends after it:
 * take it before reading, pass it to `set`, and a value read across a `clear` is not kept.
 */
export interface MemoCache<V> {
  readonly generation: number;
  /** How many entries it holds, expired ones not yet dropped included. */
  readonly size: number;
  get(key: string): V | undefined;
  set(key: string, value: V, generationAtRead: number, size?: number): void;
  clear(): void;
}

interface Entry<V> {
  value: V;
  size: number;
  expires: number;
}

/**
 * `usable()` false makes the cache neither serve nor keep anything (its invalidations may be
 * missed). `now` is the clock entries age by.
 */
export function createMemoCache<V>(
  limits: MemoLimits,
  usable: () => boolean,
  now: () => number = Date.now,
): MemoCache<V> {
  // A Map keeps insertion order, so the first key is the oldest entry: evicted first.
  const entries = new Map<string, Entry<V>>();
  let size = 0;
  let generation = 0;

  function remove(key: string, entry: Entry<V>): void {
    entries.delete(key);
    size -= entry.size;
  }

  return {
    get generation() {
      return generation;
    },

    get size() {
      return entries.size;
    },

    get(key) {
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (!usable() || entry.expires <= now()) {
        remove(key, entry);
        return undefined;
      }
      return entry.value;
    },

    set(key, value, generationAtRead, entrySize = 1) {
      if (generationAtRead !== generation || !usable() || entrySize > limits.maxSize) return;
      const existing = entries.get(key);
      if (existing) remove(key, existing);
      const time = now();
      // Every entry lives as long, so the oldest expire first: drop those, then make room.
      for (const [oldestKey, oldest] of entries) {
        const full = entries.size >= limits.maxEntries || size + entrySize > limits.maxSize;
        if (!full && oldest.expires > time) break;
        remove(oldestKey, oldest);
      }
      entries.set(key, { value, size: entrySize, expires: time + limits.ttlMs });
      size += entrySize;
    },

    clear() {
      generation++;
      entries.clear();
      size = 0;
    },
  };
}
