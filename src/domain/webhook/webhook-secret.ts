import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { newSecret } from '../../shared/ids.ts';

/*
 * Endpoint signing secrets. Unlike API keys they cannot be stored hashed: every delivery computes
 * an HMAC with the secret itself. They are stored encrypted (AES-256-GCM) under a key derived
 * from the audit key (HKDF, its own label), so a copy of the database alone does not reveal them,
 * and no further key has to be configured. The audit key is never rotated (it keys the hash
 * chain), so the derived key is stable.
 */

const keys = new WeakMap<Buffer, Buffer>();

function secretKey(auditKey: Buffer): Buffer {
  let key = keys.get(auditKey);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', auditKey, Buffer.alloc(0), 'envelope-service webhook secrets v1', 32));
    keys.set(auditKey, key);
  }
  return key;
}

/** A new endpoint secret (`whsec_` and 256 random bits). */
export function newWebhookSecret(): string {
  return newSecret('whsec');
}

/** `v1.<iv>.<tag>.<ciphertext>`, base64url. */
export function encryptWebhookSecret(auditKey: Buffer, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', secretKey(auditKey), iv);
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
}

export function decryptWebhookSecret(auditKey: Buffer, stored: string): string {
  const [version, iv, tag, ciphertext] = stored.split('.');
  if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('unreadable webhook secret');
  const decipher = createDecipheriv('aes-256-gcm', secretKey(auditKey), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}

/**
 * The `X-Envelope-Signature` value: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed
 * with the secret>`, with one `v1` per secret that signs (the current one first; after a
 * rotation, the previous one too until its grace period ends), so a receiver that still holds the
 * old secret keeps verifying while it is updated.
 */
export function webhookSignature(secrets: string[], timestamp: number, body: string): string {
  const digests = secrets.map((secret) => `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`);
  return [`t=${timestamp}`, ...digests].join(',');
}
