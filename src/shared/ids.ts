import { hash, randomBytes, randomUUID } from 'node:crypto';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function newId(): string {
  return randomUUID();
}

/**
 * Ids are UUIDs. A malformed id must behave exactly like an unknown one (docs/reference/contract.md §4), so
 * lookups check the shape first instead of letting PostgreSQL reject the cast.
 */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && uuidPattern.test(value);
}

/** A random secret of 256 bits, URL-safe, with a readable prefix naming what it is. */
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/**
 * Secrets are stored only as SHA-256 hashes. They carry 256 bits of entropy, so a fast hash is
 * enough (no password stretching needed) and lets lookups use a unique index.
 */
export function hashSecret(secret: string): string {
  // One-shot: a third of createHash's cost for a key-sized input, and every API request hashes its key.
  return hash('sha256', secret, 'hex');
}
