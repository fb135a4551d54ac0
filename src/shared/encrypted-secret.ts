import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/*
 * Secrets the service must use again in clear (webhook signing secrets, trust services' client
 * secrets) and so cannot store hashed: AES-256-GCM under a key derived from the audit key (HKDF,
 * one label per kind of secret), so a copy of the database alone does not reveal them and no
 * further key has to be configured. The audit key is never rotated (it keys the hash chain), so
 * the derived keys are stable.
 */

const keys = new Map<string, WeakMap<Buffer, Buffer>>();

function secretKey(auditKey: Buffer, label: string): Buffer {
  let byKey = keys.get(label);
  if (!byKey) {
    byKey = new WeakMap();
    keys.set(label, byKey);
  }
  let key = byKey.get(auditKey);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', auditKey, Buffer.alloc(0), label, 32));
    byKey.set(auditKey, key);
  }
  return key;
}

/** `v1.<iv>.<tag>.<ciphertext>`, base64url. */
export function encryptSecret(auditKey: Buffer, label: string, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', secretKey(auditKey, label), iv);
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
}

export function decryptSecret(auditKey: Buffer, label: string, stored: string): string {
  const [version, iv, tag, ciphertext] = stored.split('.');
  if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('unreadable stored secret');
  const decipher = createDecipheriv('aes-256-gcm', secretKey(auditKey, label), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}
