/** Share of a retry delay added or taken at random, so failed deliveries do not retry in lockstep. */
const JITTER = 0.1;

/**
 * Seconds to wait before the next attempt after `attemptsDone` failed attempts in this cycle,
 * or null once the schedule is spent (the delivery then fails for good).
 */
export function retryDelaySeconds(
  schedule: readonly number[],
  attemptsDone: number,
  random = Math.random,
): number | null {
  const base = schedule[attemptsDone - 1];
  if (base === undefined) return null;
  return Math.max(0, base * (1 + JITTER * (2 * random() - 1)));
}
