import { createHash } from 'node:crypto';
import { randomToken } from '../ids.js';

/** A new API key secret; the `crewd_` prefix lets secret scanners recognise leaked keys. */
export function generateApiKey(): string {
  return `crewd_${randomToken(40)}`;
}

/** Keys carry 200+ bits of entropy, so a fast hash is safe and keeps lookups cheap. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}
