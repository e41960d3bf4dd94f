/** A small seeded generator (mulberry32), so a failing fuzz case can be replayed. */
export function seededRandom(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (max: number) => Math.floor(next() * max);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  return { next, int, pick };
}

export type Random = ReturnType<typeof seededRandom>;

const ODD_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff\ud800',
  '𝕳𝖊𝖑𝖑𝖔',
  '👩‍👩‍👧‍👦',
  '\u202e\u0041\u0042',
  'ｆｕｌｌ',
  "'; drop table api_keys; --",
  '"; drop table x; --',
  '__proto__',
  'constructor',
  '../../etc/passwd',
  '%00',
  '%',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log-injection probe, meant literally
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  'x'.repeat(5000),
  '1e309',
  '-0',
  'NaN',
  'null',
  'true',
];

/** A JSON value of a random kind, sometimes nasty. */
export function oddValue(random: Random, depth = 0): unknown {
  switch (random.int(12)) {
    case 0:
      return null;
    case 1:
      return random.pick([true, false]);
    case 2:
      return random.pick([0, -1, 1.5, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 2 ** 31, -(2 ** 63)]);
    case 3:
    case 4:
      return random.pick(ODD_STRINGS);
    case 5:
      return depth > 3 ? [] : Array.from({ length: random.int(4) }, () => oddValue(random, depth + 1));
    case 6:
      return depth > 3 ? {} : oddObject(random, depth + 1);
    case 7:
      return nested(random.pick([10, 63, 64, 65, 200]));
    case 8:
      return Array.from({ length: 2000 }, (_, i) => i);
    case 9:
      return JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}}');
    case 10:
      return { column: random.pick(ODD_STRINGS), operator: random.pick(['eq', 'zz', 'in', 'is_null']), value: [] };
    default:
      return random.pick(ODD_STRINGS);
  }
}

export function oddObject(random: Random, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null);
  const count = random.int(5);
  for (let i = 0; i < count; i += 1) {
    Object.defineProperty(out, random.pick(ODD_STRINGS), {
      value: oddValue(random, depth),
      enumerable: true,
      configurable: true,
      writable: true,
    });
  }
  return out;
}

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i += 1) value = { a: value };
  return value;
}
