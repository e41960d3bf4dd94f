import { describe, expect, it } from 'vitest';
import { createMemoCache } from '../../src/memo-cache.js';

const limits = { maxEntries: 3, maxSize: 100, ttlMs: 60_000 };

describe('memo cache', () => {
  it('serves what it was given until cleared', () => {
    const cache = createMemoCache<string>(limits, () => true);
    cache.set('a', 'A', cache.generation);
    expect(cache.get('a')).toBe('A');
    expect(cache.get('b')).toBeUndefined();
    cache.clear();
    expect(cache.get('a')).toBeUndefined();
  });

  it('does not keep a value read before a clear (a change raced the read)', () => {
    const cache = createMemoCache<string>(limits, () => true);
    const before = cache.generation;
    cache.clear();
    cache.set('a', 'stale', before);
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', 'fresh', cache.generation);
    expect(cache.get('a')).toBe('fresh');
  });

  it('evicts the oldest entries past its count or size, and refuses an entry bigger than the whole', () => {
    const cache = createMemoCache<string>(limits, () => true);
    for (const key of ['a', 'b', 'c', 'd']) cache.set(key, key, cache.generation, 10);
    expect(cache.get('a')).toBeUndefined();
    expect(['b', 'c', 'd'].map((key) => cache.get(key))).toEqual(['b', 'c', 'd']);
    cache.set('big', 'x', cache.generation, 90);
    expect(cache.get('big')).toBe('x');
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('c')).toBeUndefined();
    expect(cache.get('d')).toBe('d');
    cache.set('huge', 'y', cache.generation, 101);
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.get('big')).toBe('x');
  });

  it('forgets entries past their life, and lets go of them as new ones come', () => {
    let clock = 1_000;
    const cache = createMemoCache<string>(
      { ...limits, ttlMs: 20 },
      () => true,
      () => clock,
    );
    cache.set('a', 'A', cache.generation);
    cache.set('b', 'B', cache.generation);
    clock += 40;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(1);
    cache.set('c', 'C', cache.generation);
    expect(cache.size).toBe(1);
    expect(cache.get('c')).toBe('C');
  });

  it('neither serves nor keeps anything while unusable', () => {
    let usable = true;
    const cache = createMemoCache<string>(limits, () => usable);
    cache.set('a', 'A', cache.generation);
    usable = false;
    expect(cache.get('a')).toBeUndefined();
    cache.set('b', 'B', cache.generation);
    usable = true;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')).toBeUndefined();
  });
});
