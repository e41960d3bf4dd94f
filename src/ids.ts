import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

export type IdPrefix =
  | 'org'
  | 'key'
  | 'dep'
  | 'ver'
  | 'tbl'
  | 'col'
  | 'row'
  | 'thr'
  | 'run'
  | 'chk'
  | 'wh'
  | 'iwh'
  | 'dlv'
  | 'evt'
  | 'cron';

/** Random base36 text; 24 characters carry about 124 bits, enough to be unguessable. */
export function randomToken(length = 24): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length)) {
      // 252 = 7 * 36: dropping the bytes above it keeps every character equally likely.
      if (byte < 252 && out.length < length) out += ALPHABET[byte % 36];
    }
  }
  return out;
}

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomToken(24)}`;
}
