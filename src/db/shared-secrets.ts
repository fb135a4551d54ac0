import { createHash, createHmac } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';

/**
 * Secrets every instance on one database must hold alike. An instance with a different audit key
 * would append audit events its peers cannot verify and sign links its peers refuse; one with a
 * different seal certificate would seal documents the others' `verify` calls foreign. Each is
 * named by the variable an operator sets, so the refusal says what to fix.
 */
export type SharedSecret = { name: string; variable: string; fingerprint: string; describes: string };

/** The audit key's fingerprint: an HMAC of a fixed label under the key, which tells keys apart without revealing one. */
export function auditKeyFingerprint(auditKey: Buffer): string {
  return createHmac('sha256', auditKey).update('envelope-service shared-secret fingerprint v1').digest('hex');
}

export function sharedSecretsOf(options: { auditKey: Buffer; sealFingerprintSha256: string }): SharedSecret[] {
  return [
    {
      name: 'audit-key',
      variable: 'AUDIT_HMAC_KEY',
      fingerprint: auditKeyFingerprint(options.auditKey),
      // The audit key also keys signed download URLs, final-copy links, one-time codes and the webhook secrets' encryption.
      describes: 'the audit chain key (which also signs download URLs and links, checks one-time codes and encrypts webhook secrets)',
    },
    {
      name: 'seal-certificate',
      variable: 'SEAL_P12',
      // The certificate is public: its own SHA-256 is its fingerprint.
      fingerprint: createHash('sha256').update(`seal-certificate:${options.sealFingerprintSha256}`).digest('hex'),
      describes: 'the sealing certificate',
    },
  ];
}

export class SharedSecretMismatchError extends Error {
  readonly variable: string;
  constructor(secret: SharedSecret, recordedAt: Date) {
    super(
      `${secret.variable}: ${secret.describes} differs from the one the other instances of this database use (recorded ${recordedAt.toISOString()}); give every instance the same ${secret.variable}, or after changing it on all of them run \`npm run cli -- secrets adopt\``,
    );
    this.name = 'SharedSecretMismatchError';
    this.variable = secret.variable;
  }
}

/**
 * Records each secret's fingerprint on the first start against a database and, on every later
 * start, refuses (SharedSecretMismatchError, one line naming the variable) when this instance's
 * secret differs. Insert-if-absent then compare, so two instances starting at once against an
 * empty table agree on the first one to commit, and the second is compared with it.
 */
export async function checkSharedSecrets(orm: MikroORM, secrets: SharedSecret[]): Promise<void> {
  const connection = orm.em.getConnection();
  for (const secret of secrets) {
    await connection.execute(`insert into shared_secret_fingerprint (name, fingerprint) values (?, ?) on conflict (name) do nothing`, [secret.name, secret.fingerprint]);
    const [recorded] = await connection.execute<{ fingerprint: string; recorded_at: Date }[]>(`select fingerprint, recorded_at from shared_secret_fingerprint where name = ?`, [secret.name]);
    if (recorded && recorded.fingerprint !== secret.fingerprint) throw new SharedSecretMismatchError(secret, new Date(recorded.recorded_at));
  }
}

/**
 * After an operator changed a shared secret on every instance (a renewed seal certificate, a
 * rotated audit key): records this configuration's fingerprints as the ones to compare with.
 * Answers which ones changed.
 */
export async function adoptSharedSecrets(orm: MikroORM, secrets: SharedSecret[]): Promise<{ variable: string; changed: boolean }[]> {
  const connection = orm.em.getConnection();
  const results: { variable: string; changed: boolean }[] = [];
  for (const secret of secrets) {
    const rows = await connection.execute<{ changed: boolean }[]>(
      `insert into shared_secret_fingerprint (name, fingerprint) values (?, ?)
       on conflict (name) do update set fingerprint = excluded.fingerprint, recorded_at = now()
         where shared_secret_fingerprint.fingerprint <> excluded.fingerprint
       returning true as changed`,
      [secret.name, secret.fingerprint],
    );
    results.push({ variable: secret.variable, changed: rows.length > 0 });
  }
  return results;
}
