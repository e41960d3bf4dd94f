import { createHmac } from 'node:crypto';
import { randomToken } from '../ids.js';

/** A new signing secret; the prefix lets secret scanners recognise a leaked one. */
export function generateSigningSecret(): string {
  return `whsec_${randomToken(40)}`;
}

/** `sha256=` + lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the secret (SPEC §6). */
export function signPayload(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** The headers of one attempt, signed now; `deliveryId` is the same on every attempt of a delivery. */
export function deliveryHeaders(input: {
  secret: string;
  event: string;
  deliveryId: string;
  body: string;
  now?: Date;
}): Record<string, string> {
  const timestamp = Math.floor((input.now ?? new Date()).getTime() / 1000);
  return {
    'content-type': 'application/json',
    'x-service-event': input.event,
    'x-service-delivery': input.deliveryId,
    'x-service-timestamp': String(timestamp),
    'x-service-signature': signPayload(input.secret, timestamp, input.body),
  };
}
