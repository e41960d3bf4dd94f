/**
 * A token bucket per API key, in memory: `perMinute` requests a minute, refilled continuously,
 * with bursts up to the same number. Each instance counts its own requests.
 */
export function createRateLimiter(perMinute: number, now: () => number = Date.now) {
  const buckets = new Map<string, { tokens: number; updatedAt: number }>();
  const refillPerMs = perMinute / 60_000;

  return {
    /** Takes one token; returns 0 when allowed, else the seconds to wait before the next one. */
    take(key: string): number {
      const time = now();
      const bucket = buckets.get(key) ?? { tokens: perMinute, updatedAt: time };
      bucket.tokens = Math.min(perMinute, bucket.tokens + (time - bucket.updatedAt) * refillPerMs);
      bucket.updatedAt = time;
      buckets.set(key, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      if (buckets.size > 100_000) buckets.clear();
      return Math.max(1, Math.ceil((1 - bucket.tokens) / refillPerMs / 1000));
    },
  };
}
