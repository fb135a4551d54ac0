import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Returns the secret stored in `filePath`, creating it (32 random bytes, mode 0600) on first use.
 * Creation uses an exclusive open, so two processes starting at once agree on one secret.
 */
export function loadOrCreateSecretFile(filePath: string): Buffer {
  fs.mkdirSync(path.dirname(filePath), { recursive: true });
  try {
    fs.writeFileSync(filePath, randomBytes(32).toString('hex'), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return Buffer.from(fs.readFileSync(filePath, 'utf8').trim(), 'hex');
}

/** The audit chain key: AUDIT_HMAC_KEY when set (needed when several instances share a database), else a generated file. */
export function loadAuditKey(config: { auditHmacKey: string | undefined; dataDir: string }): Buffer {
  if (config.auditHmacKey !== undefined) return Buffer.from(config.auditHmacKey, 'utf8');
  return loadOrCreateSecretFile(path.join(config.dataDir, 'audit-hmac.key'));
}
