/** Prefixes of crewd's settings: a variable starting with one of these is taken for a setting of crewd's. */
const OWN_PREFIXES = [
  'RUNNER_',
  'MAX_',
  'WEBHOOK_',
  'BUILD_',
  'DATABASE_',
  'BOOTSTRAP_',
  'INSTANCE_',
  'EVENT_',
  'CRON_',
];

/** Levenshtein distance, bounded: anything past `limit` counts as `limit + 1`. */
function distance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
    }
    previous = current;
  }
  return previous[b.length] ?? limit + 1;
}

export interface SettingTypo {
  name: string;
  closest: string;
}

/**
 * Variables of the environment that look like crewd's settings but are none (MAX_CONCURENT_RUNS), each with the
 * closest known setting. A variable counts when it starts with one of crewd's prefixes, or is a long name within two
 * edits of a known one.
 */
export function findSettingTypos(env: Record<string, string | undefined>, known: readonly string[]): SettingTypo[] {
  const knownSet = new Set(known);
  const typos: SettingTypo[] = [];
  for (const name of Object.keys(env)) {
    if (knownSet.has(name) || name !== name.toUpperCase()) continue;
    const ranked = known.map((candidate) => ({ candidate, d: distance(name, candidate, 4) }));
    ranked.sort((x, y) => x.d - y.d);
    const best = ranked[0];
    if (!best) continue;
    const ours = OWN_PREFIXES.some((prefix) => name.startsWith(prefix));
    // Short names (HOME, PWD) are too near short settings (HOST, PORT) to tell a typo from another program's variable.
    if (ours || (name.length >= 8 && best.d <= 2)) typos.push({ name, closest: best.candidate });
  }
  return typos;
}
