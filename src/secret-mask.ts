/** Values shorter than this are not masked: a short value ("1", "true") would garble every line it appears in. */
export const MIN_MASKED_LENGTH = 6;
const MASK = '[redacted]';

export type SecretMask = (line: string, truncated?: boolean) => string;

/**
 * Masks a version's secrets (its deployment variables' and env's values) in lines crewd logs from the processes
 * that import its code, the fork and environment servers: what they print is the crew's own output, and env values
 * are never logged (CONTRACTS §3). Longest first, so a secret containing another is masked whole; a `truncated`
 * line (its head kept) also loses a secret's beginning it ends with.
 */
export function secretMasker(values: Iterable<string>): SecretMask {
  const secrets = [...new Set(values)].filter((value) => value.length >= MIN_MASKED_LENGTH);
  secrets.sort((a, b) => b.length - a.length);
  return (line, truncated = false) => {
    let masked = line;
    for (const secret of secrets) if (masked.includes(secret)) masked = masked.replaceAll(secret, MASK);
    if (!truncated) return masked;
    for (const secret of secrets) {
      for (let length = secret.length - 1; length >= MIN_MASKED_LENGTH; length--) {
        if (masked.endsWith(secret.slice(0, length))) return `${masked.slice(0, -length)}${MASK}`;
      }
    }
    return masked;
  };
}
