import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The pause before a poll's next look: 20 ms at first, growing to 100 ms. A look asks the app or a crewd process
 * (3 to 5 ms of CPU a request): at a steady 20 ms, a test waiting on a run spent a fifth of a core asking.
 */
export function pollPause(attempt: number): Promise<void> {
  return sleep(Math.min(100, Math.round(20 * 1.5 ** attempt)));
}

/** Polls `probe` until it returns something truthy, and returns that; fails after `timeoutMs`. */
export async function until<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await pollPause(attempt);
  }
}
