import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** AES-256-GCM with a key derived from SECRETS_KEY; `context` binds a value to where it is stored. */
export function createSecretBox(secretsKey: string) {
  const key = Buffer.from(hkdfSync('sha256', secretsKey, '', 'crewd deployment variables', 32));
  return {
    seal(value: string, context: string): string {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(context));
      const sealed = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
      return [iv, cipher.getAuthTag(), sealed].map((part) => part.toString('base64')).join('.');
    },
    /** Throws when the value was sealed with another key (or changed). */
    open(stored: string, context: string): string {
      const [iv = '', tag = '', sealed = ''] = stored.split('.');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64')), decipher.final()]).toString('utf8');
    },
  };
}

export type SecretBox = ReturnType<typeof createSecretBox>;
