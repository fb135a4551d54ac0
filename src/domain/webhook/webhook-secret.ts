import { createHmac } from 'node:crypto';
import { decryptSecret, encryptSecret } from '../../shared/encrypted-secret.ts';
import { newSecret } from '../../shared/ids.ts';

/*
 * Endpoint signing secrets. Unlike API keys they cannot be stored hashed: every delivery computes
 * an HMAC with the secret itself. They are stored encrypted (AES-256-GCM) under a key derived
 * from the audit key (HKDF, its own label), so a copy of the database alone does not reveal them,
 * and no further key has to be configured. The audit key is never rotated (it keys the hash
 * chain), so the derived key is stable.
 */

const LABEL = 'envelope-service webhook secrets v1';

/** A new endpoint secret (`whsec_` and 256 random bits). */
export function newWebhookSecret(): string {
  return newSecret('whsec');
}

/** `v1.<iv>.<tag>.<ciphertext>`, base64url (shared/encrypted-secret.ts). */
export function encryptWebhookSecret(auditKey: Buffer, secret: string): string {
  return encryptSecret(auditKey, LABEL, secret);
}

export function decryptWebhookSecret(auditKey: Buffer, stored: string): string {
  return decryptSecret(auditKey, LABEL, stored);
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
