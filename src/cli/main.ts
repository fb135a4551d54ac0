/**
 * The command line (docs/reference/contract.md §3). Prints JSON on stdout; errors as one line on stderr, exit 1.
 *
 *   npm run cli -- team create --name NAME [--workspace ID]
 *   npm run cli -- key create --team ID [--label TEXT]
 *   npm run cli -- key revoke --key-id ID
 *   npm run cli -- audit verify --envelope ID     (exit 2 when the chain is broken)
 *   npm run cli -- verify FILE.pdf                 (offline; exit 2 when the seal is not valid)
 *   npm run cli -- verify-package FILE.zip [--audit-key KEY | --audit-key-file PATH] [--seal-cert FILE.pem]   (offline; exit 2 when any part fails or another seal sealed it)
 *   npm run cli -- secrets adopt                   (after changing AUDIT_HMAC_KEY or SEAL_P12 on every instance)
 *   npm run cli -- blobs migrate                   (DATA_DIR/blobs to the BLOB_STORE_URL bucket; exit 1 if any failed)
 */
import { createHash, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { openDatabase } from '../db/database.ts';
import { adoptSharedSecrets, sharedSecretsOf } from '../db/shared-secrets.ts';
import { type TrustedSeal, verifyEvidencePackage } from '../domain/artefact/evidence-check.ts';
import { installationSealFingerprint, loadSealCertificate, SealCertificateError } from '../domain/artefact/seal-certificate.ts';
import { fileSource } from '../domain/artefact/zip-reader.ts';
import { verifyAuditChain } from '../domain/audit/audit.service.ts';
import { verifyPdf } from '../domain/pdf/verify.ts';
import { createApiKey, createTeam, revokeApiKey } from '../domain/team/team.service.ts';
import { blobDirectory, createBlobStore, createFileBlobStore, migrateBlobs } from '../shared/blob-store/index.ts';
import { DomainError } from '../shared/errors.ts';
import { isUuid } from '../shared/ids.ts';
import { loadAuditKey } from '../shared/secret-file.ts';

const usage = `usage:
  cli team create --name NAME [--workspace ID]
  cli key create --team ID [--label TEXT]
  cli key revoke --key-id ID
  cli audit verify --envelope ID
  cli verify FILE.pdf
  cli verify-package FILE.zip [--audit-key KEY | --audit-key-file PATH] [--seal-cert FILE.pem]...
  cli secrets adopt
  cli blobs migrate`;

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

const [resource, action, ...rest] = process.argv.slice(2);

// Offline: needs no database, only the file (and the seal certificate, to say whether it is ours).
if (resource === 'verify') {
  if (action === undefined || rest.length > 0) fail(usage);
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(action);
  } catch (error) {
    fail(`cannot read ${action}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const ours: string[] = [];
  let trustAnchors: Uint8Array[] = [];
  try {
    const verifyConfig = loadConfig();
    trustAnchors = verifyConfig.trustAnchors;
    // The generated seal is only read here, never created: a verifier must not mint certificates.
    const fingerprint = await installationSealFingerprint(verifyConfig, new Date());
    if (fingerprint !== undefined) ours.push(fingerprint);
  } catch {
    // Without a readable configuration the file is still checked; it is just not recognised as ours.
  }
  let report;
  try {
    report = await verifyPdf(bytes, { ourCertificateSha256: ours, trustAnchors });
  } catch (error) {
    fail(`cannot verify ${action}: ${(error as Error).message}`);
  }
  console.log(JSON.stringify(report));
  process.exit(report.valid ? 0 : 2);
}
// Offline: the package alone; with --audit-key (the service's AUDIT_HMAC_KEY) every chain hash is recomputed too.
// A package passes only when sealed by this installation's seal (the configuration's SEAL_P12, or
// the generated one under DATA_DIR) or by a certificate named with --seal-cert (a previous seal,
// another installation an operator vouches for).
if (resource === 'verify-package') {
  const parsed = (() => {
    try {
      return parseArgs({
        args: rest,
        options: { 'audit-key': { type: 'string' }, 'audit-key-file': { type: 'string' }, 'seal-cert': { type: 'string', multiple: true } },
        allowPositionals: false,
      });
    } catch (error) {
      fail(`${(error as Error).message}\n${usage}`);
    }
  })();
  if (action === undefined) fail(usage);
  // Read where it lies, range by range (zip-reader.ts): never the whole package in memory.
  let packageFd: number;
  try {
    packageFd = fs.openSync(action, 'r');
    if (!fs.fstatSync(packageFd).isFile()) throw Object.assign(new Error('not a file'), { code: 'EISDIR' });
  } catch (error) {
    fail(`cannot read ${action}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  // The key as AUDIT_HMAC_KEY gives it (text), or the generated key file (DATA_DIR/audit-hmac.key: the key in hex).
  const keyText = parsed.values['audit-key'];
  const keyFile = parsed.values['audit-key-file'];
  let auditKey: Buffer | undefined;
  if (keyText !== undefined) auditKey = Buffer.from(keyText, 'utf8');
  else if (keyFile !== undefined) {
    try {
      auditKey = Buffer.from(fs.readFileSync(keyFile, 'utf8').trim(), 'hex');
    } catch (error) {
      fail(`cannot read ${keyFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  const trustedSeals: TrustedSeal[] = [];
  for (const file of parsed.values['seal-cert'] ?? []) {
    let pem: string;
    try {
      pem = fs.readFileSync(file, 'utf8');
    } catch (error) {
      fail(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    const blocks = pem.match(/-----BEGIN CERTIFICATE-----[^]*?-----END CERTIFICATE-----/g) ?? [];
    if (blocks.length === 0) fail(`--seal-cert ${file}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it`);
    for (const block of blocks) {
      try {
        trustedSeals.push({ fingerprintSha256: createHash('sha256').update(new X509Certificate(block).raw).digest('hex'), source: 'seal-cert' });
      } catch (error) {
        fail(`--seal-cert ${file}: a certificate in it cannot be read (${(error as Error).message})`);
      }
    }
  }
  // The installation's seal, read as the service reads it; the generated one is only read, never
  // created: a verifier must not mint certificates. A configured one that cannot be read is an
  // error (the verdict would otherwise depend on a typo).
  let installation: ReturnType<typeof loadConfig> | undefined;
  try {
    installation = loadConfig();
  } catch {
    // Without a readable configuration there is no installation seal: --seal-cert may still name one.
  }
  if (installation !== undefined) {
    try {
      // Packages outlive certificates: the installation's seal counts whether or not it is valid today.
      const fingerprint = await installationSealFingerprint(installation, null);
      if (fingerprint !== undefined) trustedSeals.push({ fingerprintSha256: fingerprint, source: 'installation' });
    } catch (error) {
      fail(error instanceof SealCertificateError ? error.message : String(error));
    }
  }
  const report = await verifyEvidencePackage(fileSource(packageFd), { auditKey, trustedSeals });
  fs.closeSync(packageFd);
  console.log(JSON.stringify(report));
  process.exit(report.valid ? 0 : 2);
}
// Needs no database: the files under DATA_DIR/blobs and the bucket BLOB_STORE_URL names.
if (resource === 'blobs') {
  if (action !== 'migrate' || rest.length > 0) fail(usage);
  let migrateConfig: ReturnType<typeof loadConfig>;
  try {
    migrateConfig = loadConfig();
  } catch (error) {
    fail(error instanceof ConfigError ? error.message : String(error));
  }
  if (migrateConfig.blobStore.kind !== 's3')
    fail('blobs migrate copies DATA_DIR/blobs to an object store: set BLOB_STORE_URL=s3://BUCKET[/PREFIX] (and S3_ENDPOINT, S3_REGION, S3_FORCE_PATH_STYLE as needed)');
  const source = createFileBlobStore(blobDirectory(migrateConfig.dataDir));
  const target = createBlobStore({ dataDir: migrateConfig.dataDir, location: migrateConfig.blobStore, cacheBytes: migrateConfig.blobCacheBytes });
  const summary = await migrateBlobs(source, target, (sha256, outcome) => {
    if (outcome === 'failed') console.error(`failed: ${sha256}`);
  });
  target.close();
  console.log(JSON.stringify(summary));
  process.exit(summary.failed > 0 ? 1 : 0);
}

const { values } = (() => {
  try {
    return parseArgs({
      args: rest,
      options: {
        name: { type: 'string' },
        workspace: { type: 'string' },
        team: { type: 'string' },
        label: { type: 'string' },
        'key-id': { type: 'string' },
        envelope: { type: 'string' },
      },
      strict: true,
    });
  } catch (error) {
    return fail(`${(error as Error).message}\n${usage}`);
  }
})();

const command = `${resource ?? ''} ${action ?? ''}`;
if (!['team create', 'key create', 'key revoke', 'audit verify', 'secrets adopt'].includes(command)) fail(usage);
if (command === 'team create' && !values.name) fail('team create needs --name');
if (command === 'key create' && !values.team) fail('key create needs --team');
if (command === 'key revoke' && !values['key-id']) fail('key revoke needs --key-id');
if (command === 'audit verify' && !isUuid(values.envelope)) fail('audit verify needs --envelope with an envelope id');

let config;
try {
  config = loadConfig();
} catch (error) {
  fail(error instanceof ConfigError ? error.message : String(error));
}

let database;
try {
  // Beside a server running on the embedded database, the command line uses that server's database.
  database = await openDatabase(config, { shareRunningEmbedded: true });
} catch (error) {
  fail(`could not open the database: ${(error as Error).message}`);
}
try {
  const em = database.orm.em.fork();
  let output: unknown;
  if (command === 'team create') {
    output = await createTeam(em, { name: values.name!, workspaceId: values.workspace });
  } else if (command === 'key create') {
    const issued = await createApiKey(em, { teamId: values.team!, label: values.label });
    output = { keyId: issued.keyId, teamId: issued.teamId, apiKey: issued.apiKey };
  } else if (command === 'key revoke') {
    const revoked = await revokeApiKey(em, { keyId: values['key-id']! });
    output = { keyId: revoked.keyId, revokedAt: revoked.revokedAt.toISOString() };
  } else if (command === 'secrets adopt') {
    // The fingerprints every instance's start is compared with become this configuration's.
    const sealFingerprintSha256 = config.sealSigner.kind !== 'p12' ? (await installationSealFingerprint(config, new Date()))! : loadSealCertificate(config).fingerprintSha256;
    const adopted = await adoptSharedSecrets(database.orm, sharedSecretsOf({ auditKey: loadAuditKey(config), sealFingerprintSha256 }));
    output = { adopted };
  } else {
    // An operator's tool: it reads the chain directly, with the service's own audit key.
    const verification = await verifyAuditChain(em, loadAuditKey(config), values.envelope!);
    // Every envelope's chain starts with its creation, so an empty chain means an unknown id.
    if (verification.valid && verification.length === 0) throw new DomainError('Envelope.NotFound', 'No audit events exist for this envelope id.');
    output = { envelopeId: values.envelope, ...verification };
    if (!verification.valid) process.exitCode = 2;
  }
  console.log(JSON.stringify(output));
} catch (error) {
  await database.close();
  if (error instanceof DomainError) fail(`${error.name}: ${error.description}`);
  fail(`unexpected error: ${(error as Error).message}`);
}
await database.close();
