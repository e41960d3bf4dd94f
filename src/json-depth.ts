/** Deepest nesting of arrays and objects crewd takes, in request bodies and in runners' lines. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether a parsed JSON value nests arrays and objects deeper than `limit` (a scalar is depth 0).
 * Iterative, so hostile input cannot overflow the stack. PostgreSQL's jsonb refuses very deep
 * values, so they are stopped before they reach it.
 */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (current === null || typeof current !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}
