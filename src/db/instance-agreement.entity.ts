import { defineEntity, p } from '@mikro-orm/core';

/**
 * What every instance on one database must agree on, kept in the database they share.
 *
 * `shared_secret_fingerprint`: one row per secret that instances must hold alike (the audit key,
 * which also keys signed URLs, one-time codes and webhook secrets; the seal certificate). The row
 * keeps a fingerprint, never the secret: the first instance to start records it and every later
 * start compares (src/db/shared-secrets.ts). The statements are hand-written there; the entity
 * exists so that migrations create the table and the schema check knows it.
 */
export const SharedSecretFingerprintSchema = defineEntity({
  name: 'SharedSecretFingerprint',
  tableName: 'shared_secret_fingerprint',
  properties: {
    name: p.string().length(64).primary(),
    fingerprint: p.string().length(128),
    recordedAt: p.datetime().defaultRaw('now()'),
  },
});

/**
 * `sandbox_clock`: the sandbox clock's offset (SANDBOX_CLOCK=true), one row, so that every
 * instance, and an instance after a restart, tells the same time (src/db/shared-sandbox-clock.ts).
 */
export const SandboxClockSchema = defineEntity({
  name: 'SandboxClock',
  tableName: 'sandbox_clock',
  properties: {
    id: p.smallint().primary().autoincrement(false),
    offsetMs: p.bigint('number').default(0),
    changedAt: p.datetime().defaultRaw('now()'),
  },
});
