import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { isFrameOrigin } from './shared/web-origin.ts';

/** SEAL_SIGNER=pkcs11: the module, the token (by label or slot), how to log in, and which key. */
export type Pkcs11SignerConfig = {
  kind: 'pkcs11';
  /** PKCS11_MODULE: the module's shared library (SoftHSM: /usr/lib/softhsm/libsofthsm2.so). */
  modulePath: string;
  /** PKCS11_TOKEN_LABEL, else PKCS11_SLOT (the slot id as the module numbers it). */
  token: { label: string } | { slot: string };
  /** PKCS11_PIN, else the first line of PKCS11_PIN_FILE (read at start-up). */
  pin: { value: string } | { file: string };
  /** PKCS11_KEY_LABEL: the private key's CKA_LABEL (its certificate has the same label, unless SEAL_CERT_CHAIN). */
  keyLabel: string;
  /** SEAL_CERT_CHAIN: a PEM file with the signer's certificate first and its chain; unset: read from the token. */
  certificateChainPath: string | undefined;
};

/** SEAL_SIGNER=csc: the service's own credential at a Cloud Signature Consortium API v2 provider. */
export type CscSignerConfig = {
  kind: 'csc';
  /** SEAL_CSC_URL: the provider's CSC base URL, path included (`https://tsp.example/csc/v2`). */
  url: string;
  /** SEAL_CSC_CLIENT_ID: the OAuth 2 client the provider registered for this service. */
  clientId: string;
  /** SEAL_CSC_CLIENT_SECRET, else the first line of SEAL_CSC_CLIENT_SECRET_FILE (read at start-up). */
  clientSecret: { value: string } | { file: string };
  /** SEAL_CSC_CREDENTIAL_ID: the seal's credential at the provider. */
  credentialId: string;
  /** SEAL_CSC_PIN, else SEAL_CSC_PIN_FILE: for a credential that needs explicit authorization; unset: none given. */
  pin: { value: string } | { file: string } | undefined;
};

/**
 * The service's whole configuration, read from the environment once at start-up.
 * Everything else receives a `Config` value; nothing reads `process.env` directly.
 */
export type Config = {
  port: number;
  /** HOST: the listening address; undefined: every interface. */
  host: string | undefined;
  publicUrl: string;
  /** PostgreSQL connection string; undefined means "start the embedded PostgreSQL under dataDir". */
  databaseUrl: string | undefined;
  dataDir: string;
  smtpUrl: string | undefined;
  /** Generic HTTP SMS/WhatsApp provider; undefined writes messages under dataDir/sms. */
  smsProvider: { url: string; authorization: string | undefined; bodyTemplate: string } | undefined;
  /** The From of every mail: `MAIL_FROM`, else `no-reply@` the public host. */
  mailFrom: string;
  /** Settled queue rows and webhook deliveries are deleted after this many days (DELIVERY_HISTORY_RETENTION_DAYS). */
  deliveryHistoryRetentionDays: number;
  /** The completion mail attaches the sealed PDFs when together they are at most this many bytes (0: never). */
  mailAttachmentLimitBytes: number;
  sealP12Path: string | undefined;
  sealP12Password: string | undefined;
  /**
   * SEAL_SIGNER: where the seal's private key lives. `p12` (the default): SEAL_P12 or the generated
   * one, in the process. `pkcs11`: on a token behind a PKCS#11 module, which signs hashes and never
   * gives the key out (domain/artefact/pkcs11-signer.ts). `csc`: at a trust service provider,
   * reached over the CSC API v2, which signs hashes the same way (domain/artefact/csc-signer.ts).
   */
  sealSigner: { kind: 'p12' } | Pkcs11SignerConfig | CscSignerConfig;
  /**
   * TRUST_ANCHORS: the certificates (DER) `POST /verify` validates signers' chains up to, read at
   * start-up from a PEM bundle; empty when unset (chains are then reported as not checked).
   */
  trustAnchors: Uint8Array[];
  /** RFC 3161 timestamp authority: when set, every seal carries a signature timestamp (PAdES B-T). */
  tsaUrl: string | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /**
   * Traces (OpenTelemetry), on when an OTLP endpoint is named (`OTEL_EXPORTER_OTLP_ENDPOINT` or
   * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) and `OTEL_SDK_DISABLED` is not set. The exporter reads the
   * other standard variables itself (headers, timeout, compression): shared/tracing.ts.
   */
  tracing: { serviceName: string } | undefined;
  /** The replaced service answered every error with HTTP 200; some callers depend on that. */
  restErrorsHttp200: boolean;
  sandboxClock: boolean;
  /** Whether this instance runs the outbox worker (durable jobs: sealing, later delivery). */
  outboxWorker: boolean;
  /** Largest accepted document upload, in bytes (docs/reference/interface-spec.md §8: 48 MB). */
  maxDocumentBytes: number;
  /** How long a request may wait for a database connection before failing instead of hanging. */
  databaseAcquireTimeoutMs: number;
  /** Keys the audit hash chain; undefined means "generate one once under dataDir". */
  auditHmacKey: string | undefined;
  /** Reverse proxies in front of the service whose X-Forwarded-For entries are trusted (0: none). */
  trustedProxyHops: number;
  /** Prepare the read model's statements on each database connection (a server only). */
  databasePreparedStatements: boolean;
  /** Execute GraphQL operations with graphql-jit (compiled once per document); off: graphql-js. */
  graphqlJit: boolean;
  /** Answer plain read queries with the JSON text PostgreSQL writes (graphql/pass-through.ts); off: always execute. */
  graphqlPassThrough: boolean;
  /** Open plain live-status subscriptions over SSE beside yoga (GRAPHQL_LIVE_LEAN, graphql/live-lean.ts). */
  graphqlLiveLean: boolean;
  /** Answer `__schema`/`__type` (GraphiQL needs them to load the schema); off refuses them. */
  graphqlIntrospection: boolean;
  /**
   * Requests per minute per API key, per client address without a key, per signing link, per
   * public link (its page's requests, whoever sends them) and per client address on public links'
   * pages (0: no limit).
   */
  rateLimits: { apiKey: number; client: number; signingToken: number; signingPage: number; publicLink: number; publicLinkAddress: number };
  /**
   * How long the listener holds the 429 of a key already known over its budget (a client that
   * ignored `Retry-After`) before writing it; 0 answers at once (docs/decisions.md, "Floods held").
   */
  rateLimitRefusalHoldMs: number;
  /** REST reads one API key may have worked on at once in a process; more wait their turn (0: no cap). */
  readsInFlightPerKey: number;
  /** How long a verified API key is trusted without asking the database again (API_KEY_CACHE_TTL_MS). */
  apiKeyCacheTtlMs: number;
  /** Open subscriptions one API key may hold on one instance (SUBSCRIPTIONS_PER_KEY). */
  subscriptionsPerKey: number;
  /** SMS/WhatsApp messages (invitations, reminders, one-time codes) per person in any 24 hours; 0: no cap. */
  phoneMessagesPerDay: number;
  /** Rows of one team's bulk send handled per job step, so at once (BULK_SEND_ROWS_IN_FLIGHT). */
  bulkSendRowsInFlight: number;
  /** The pace of a team's bulk send, rows per minute, each also spending its key's rate budget (BULK_SEND_ROWS_PER_MINUTE; 0: no pace). */
  bulkSendRowsPerMinute: number;
  /** Origins whose pages may show the signing page in a frame (SIGNING_FRAME_ANCESTORS; empty: none). */
  signingFrameAncestors: string[];
  /** Webhook endpoints may name loopback and private addresses (development and tests only). */
  webhookAllowPrivate: boolean;
  /** How long one webhook POST may take before it counts as failed (WEBHOOK_TIMEOUT_MS). */
  webhookTimeoutMs: number;
  /** METRICS_PORT: serve GET /metrics on this port of its own (no token); undefined: not served there. */
  metricsPort: number | undefined;
  /** METRICS_TOKEN: serve GET /metrics on the main port to `Authorization: Bearer <token>`; undefined: not there. */
  metricsToken: string | undefined;
  /** BLOB_STORE_URL: files under DATA_DIR/blobs, or an S3-compatible bucket (S3_* variables). */
  blobStore:
    | { kind: 'file' }
    | {
        kind: 's3';
        bucket: string;
        prefix: string;
        endpoint: string | undefined;
        region: string;
        forcePathStyle: boolean;
        /** S3_CONNECT_TIMEOUT_MS, S3_REQUEST_TIMEOUT_MS, S3_OPERATION_TIMEOUT_MS. */
        deadlines: { connectMs: number; requestMs: number; operationMs: number };
      };
  /** BLOB_CACHE_BYTES: local copies of S3 objects (for PDF work) kept under DATA_DIR/blob-cache. */
  blobCacheBytes: number;
  /** DOWNLOAD_REDIRECT: sealed PDFs are answered 302 to a presigned URL of the object store (S3 only). */
  downloadRedirect: boolean;
};

export class ConfigError extends Error {
  readonly variable: string;
  constructor(variable: string, problem: string) {
    super(`Invalid configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
    this.variable = variable;
  }
}

const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be one of true, false, 1, 0, yes, no' })
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

/** A request budget per minute; 0 turns the limit off. */
function perMinute(defaultValue: number) {
  const message = 'must be an integer from 0 (no limit) to 1000000 (requests per minute)';
  return z.coerce.number({ error: message }).int(message).min(0, message).max(1_000_000, message).default(defaultValue);
}

/** A duration in milliseconds within [min, max]. */
function milliseconds(min: number, max: number, defaultValue: number) {
  const message = `must be an integer from ${min} to ${max} (milliseconds)`;
  return z.coerce.number({ error: message }).int(message).min(min, message).max(max, message).default(defaultValue);
}

/**
 * Origins, separated by spaces or commas, each `https://host[:port]` or, for development,
 * `http://localhost[:port]`: exactly what CSP `frame-ancestors` takes, nothing that widens it
 * (no paths, no wildcards, no schemes alone).
 */
const originList = z.string().transform((value, check) => {
  const origins = value.split(/[\s,]+/).filter((origin) => origin !== '');
  for (const origin of origins) {
    if (!isFrameOrigin(origin)) {
      check.addIssue({ code: 'custom', message: `must be origins separated by spaces or commas, each https://host[:port] or http://localhost[:port]; ${JSON.stringify(origin)} is not` });
      return z.NEVER;
    }
  }
  return origins.map((origin) => origin.toLowerCase());
});

const variables = {
  // The address to listen on. Unset: every interface (IPv6 and IPv4 where the system allows), as
  // a container or a host behind a proxy needs; 127.0.0.1 keeps the service to this machine.
  HOST: z
    .string()
    .trim()
    .regex(/^(?:[0-9.]+|[0-9a-fA-F:.]+|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)$/, 'must be an IP address or a host name, e.g. 0.0.0.0, ::, 127.0.0.1 or localhost')
    .optional(),
  PORT: z.coerce
    .number({ error: 'must be an integer between 0 and 65535' })
    .int('must be an integer between 0 and 65535')
    .min(0, 'must be an integer between 0 and 65535')
    .max(65535, 'must be an integer between 0 and 65535')
    .default(4000),
  PUBLIC_URL: z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL, e.g. https://sign.example.com' }).optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/.+/, 'must be a postgres:// or postgresql:// connection string')
    .optional(),
  DATA_DIR: z.string().min(1, 'must not be empty').default('./.data'),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\/.+/, 'must be an smtp:// or smtps:// URL')
    .optional(),
  SMS_PROVIDER_URL: z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' }).optional(),
  SMS_PROVIDER_AUTHORIZATION: z
    .string()
    .regex(/^[^\r\n]+$/, 'must be one line (the Authorization header value)')
    .optional(),
  SMS_PROVIDER_BODY: z
    .string()
    .refine((value) => {
      try {
        JSON.parse(value.replace(/\{\{\w+\}\}/g, 'x'));
        return true;
      } catch {
        return false;
      }
    }, 'must be a JSON template whose {{to}}, {{channel}}, {{text}}, {{messageId}} sit inside strings')
    .optional(),
  // One line: a line break would let the value write headers of its own.
  MAIL_FROM: z
    .string()
    .regex(/^[^\r\n]{3,200}$/, 'must be one line, e.g. "Envelopes <no-reply@sign.example.com>"')
    .optional(),
  SEAL_P12: z.string().min(1, 'must name a PKCS#12 file').optional(),
  SEAL_P12_PASSWORD: z.string().optional(),
  SEAL_SIGNER: z.enum(['p12', 'pkcs11', 'csc'], { error: 'must be p12, pkcs11 or csc' }).default('p12'),
  PKCS11_MODULE: z.string().min(1).optional(),
  PKCS11_TOKEN_LABEL: z.string().max(32, 'must be at most 32 characters (a PKCS#11 token label)').optional(),
  PKCS11_SLOT: z
    .string()
    .regex(/^\d{1,20}$/, 'must be a slot id (a non-negative integer)')
    .optional(),
  PKCS11_PIN: z.string().optional(),
  PKCS11_PIN_FILE: z.string().min(1).optional(),
  PKCS11_KEY_LABEL: z.string().min(1).optional(),
  SEAL_CERT_CHAIN: z.string().min(1, 'must name a PEM file').optional(),
  SEAL_CSC_URL: z.url({ protocol: /^https?$/, error: 'must be the absolute http(s) URL of a CSC API v2 provider (e.g. https://tsp.example/csc/v2)' }).optional(),
  SEAL_CSC_CLIENT_ID: z.string().min(1).optional(),
  SEAL_CSC_CLIENT_SECRET: z.string().optional(),
  SEAL_CSC_CLIENT_SECRET_FILE: z.string().min(1).optional(),
  SEAL_CSC_CREDENTIAL_ID: z.string().min(1).optional(),
  SEAL_CSC_PIN: z.string().optional(),
  SEAL_CSC_PIN_FILE: z.string().min(1).optional(),
  TRUST_ANCHORS: z.string().min(1, 'must name a PEM file of trusted root certificates').optional(),
  TSA_URL: z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL of an RFC 3161 timestamp authority' }).optional(),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      error: 'must be one of fatal, error, warn, info, debug, trace, silent',
    })
    .default('info'),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL of an OTLP/HTTP collector' }).optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL of an OTLP/HTTP traces endpoint' }).optional(),
  OTEL_SERVICE_NAME: z
    .string()
    .regex(/^[^\r\n]{1,200}$/, 'must be one line of at most 200 characters')
    .default('envelope-service'),
  OTEL_SDK_DISABLED: booleanFlag.default(false),
  REST_ERRORS_HTTP_200: booleanFlag.default(false),
  SANDBOX_CLOCK: booleanFlag.default(false),
  OUTBOX_WORKER: booleanFlag.default(true),
  DATABASE_ACQUIRE_TIMEOUT_MS: z.coerce
    .number({ error: 'must be a positive integer (milliseconds)' })
    .int('must be a positive integer (milliseconds)')
    .positive('must be a positive integer (milliseconds)')
    .default(15_000),
  TRUST_PROXY_HOPS: z.coerce
    .number({ error: 'must be an integer from 0 to 10' })
    .int('must be an integer from 0 to 10')
    .min(0, 'must be an integer from 0 to 10')
    .max(10, 'must be an integer from 0 to 10')
    .default(0),
  GRAPHQL_JIT: booleanFlag.default(true),
  GRAPHQL_PASS_THROUGH: booleanFlag.default(true),
  GRAPHQL_LIVE_LEAN: booleanFlag.default(true),
  GRAPHQL_INTROSPECTION: booleanFlag.default(true),
  DATABASE_PREPARED_STATEMENTS: booleanFlag.default(true),
  RATE_LIMIT_PER_MINUTE: perMinute(600),
  RATE_LIMIT_ANONYMOUS_PER_MINUTE: perMinute(300),
  RATE_LIMIT_SIGNING_PER_MINUTE: perMinute(120),
  RATE_LIMIT_SIGNING_PAGES_PER_MINUTE: perMinute(600),
  RATE_LIMIT_PUBLIC_LINK_PER_MINUTE: perMinute(60),
  RATE_LIMIT_PUBLIC_LINK_ADDRESS_PER_MINUTE: perMinute(30),
  RATE_LIMIT_REFUSAL_HOLD_MS: z.coerce
    .number({ error: 'must be an integer from 0 to 10000 (milliseconds)' })
    .int('must be an integer from 0 to 10000 (milliseconds)')
    .min(0, 'must be an integer from 0 to 10000 (milliseconds)')
    .max(10_000, 'must be an integer from 0 to 10000 (milliseconds)')
    .default(1_000),
  READS_IN_FLIGHT_PER_KEY: z.coerce
    .number({ error: 'must be an integer from 0 to 1000' })
    .int('must be an integer from 0 to 1000')
    .min(0, 'must be an integer from 0 to 1000')
    .max(1000, 'must be an integer from 0 to 1000')
    .default(2),
  API_KEY_CACHE_TTL_MS: z.coerce
    .number({ error: 'must be an integer from 100 to 300000 (milliseconds)' })
    .int('must be an integer from 100 to 300000 (milliseconds)')
    .min(100, 'must be an integer from 100 to 300000 (milliseconds)')
    .max(300_000, 'must be an integer from 100 to 300000 (milliseconds)')
    .default(5_000),
  SUBSCRIPTIONS_PER_KEY: z.coerce
    .number({ error: 'must be an integer from 1 to 1000000' })
    .int('must be an integer from 1 to 1000000')
    .min(1, 'must be an integer from 1 to 1000000')
    .max(1_000_000, 'must be an integer from 1 to 1000000')
    .default(1_000),
  SIGNING_FRAME_ANCESTORS: originList.optional(),
  DELIVERY_HISTORY_RETENTION_DAYS: z.coerce
    .number({ error: 'must be an integer from 1 to 3650 (days)' })
    .int('must be an integer from 1 to 3650 (days)')
    .min(1, 'must be an integer from 1 to 3650 (days)')
    .max(3650, 'must be an integer from 1 to 3650 (days)')
    .default(30),
  MAIL_ATTACHMENT_LIMIT_BYTES: z.coerce
    .number({ error: 'must be an integer from 0 to 26214400 (25 MiB)' })
    .int('must be an integer from 0 to 26214400 (25 MiB)')
    .min(0, 'must be an integer from 0 to 26214400 (25 MiB)')
    .max(25 * 1024 * 1024, 'must be an integer from 0 to 26214400 (25 MiB)')
    .default(10 * 1024 * 1024),
  PHONE_MESSAGES_PER_DAY: z.coerce
    .number({ error: 'must be an integer from 0 (no cap) to 1000' })
    .int('must be an integer from 0 (no cap) to 1000')
    .min(0, 'must be an integer from 0 (no cap) to 1000')
    .max(1000, 'must be an integer from 0 (no cap) to 1000')
    .default(10),
  BULK_SEND_ROWS_IN_FLIGHT: z.coerce
    .number({ error: 'must be an integer from 1 to 100' })
    .int('must be an integer from 1 to 100')
    .min(1, 'must be an integer from 1 to 100')
    .max(100, 'must be an integer from 1 to 100')
    .default(10),
  BULK_SEND_ROWS_PER_MINUTE: z.coerce
    .number({ error: 'must be an integer from 0 (no pace) to 100000' })
    .int('must be an integer from 0 (no pace) to 100000')
    .min(0, 'must be an integer from 0 (no pace) to 100000')
    .max(100_000, 'must be an integer from 0 (no pace) to 100000')
    .default(300),
  WEBHOOK_ALLOW_PRIVATE: booleanFlag.default(false),
  WEBHOOK_TIMEOUT_MS: z.coerce
    .number({ error: 'must be an integer from 1000 to 60000 (milliseconds)' })
    .int('must be an integer from 1000 to 60000 (milliseconds)')
    .min(1000, 'must be an integer from 1000 to 60000 (milliseconds)')
    .max(60_000, 'must be an integer from 1000 to 60000 (milliseconds)')
    .default(10_000),
  METRICS_PORT: z.coerce
    .number({ error: 'must be an integer between 0 and 65535' })
    .int('must be an integer between 0 and 65535')
    .min(0, 'must be an integer between 0 and 65535')
    .max(65535, 'must be an integer between 0 and 65535')
    .optional(),
  // A bearer credential: long enough not to be guessed, and one header-safe token (no spaces).
  METRICS_TOKEN: z
    .string()
    .regex(/^[A-Za-z0-9._~+/=-]{16,256}$/, 'must be 16 to 256 characters of A-Z a-z 0-9 . _ ~ + / = - (e.g. openssl rand -hex 32)')
    .optional(),
  BLOB_STORE_URL: z
    .string()
    .transform((value, check) => {
      if (value === 'file:' || value === 'file://') return { kind: 'file' as const };
      // A bucket name as S3 allows it (3–63 lower-case letters, digits, dots, hyphens), then an
      // optional key prefix.
      const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/([^?#]*))?$/.exec(value);
      if (!match) {
        check.addIssue({ code: 'custom', message: 'must be file: (files under DATA_DIR/blobs) or s3://BUCKET[/PREFIX] with a valid bucket name' });
        return z.NEVER;
      }
      const prefix = (match[2] ?? '').replace(/^\/+|\/+$/g, '');
      return { kind: 's3' as const, bucket: match[1]!, prefix: prefix === '' ? '' : `${prefix}/` };
    })
    .optional(),
  S3_ENDPOINT: z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL of an S3-compatible server, e.g. http://minio:9000' }).optional(),
  S3_REGION: z
    .string()
    .regex(/^[a-z0-9-]{1,40}$/, 'must be a region name such as us-east-1')
    .default('us-east-1'),
  S3_FORCE_PATH_STYLE: booleanFlag.default(false),
  // Deadlines of every object-store call (docs/operations.md, "Object storage"): a store that
  // accepts connections but never answers must fail calls with Storage.Unavailable, not hold them.
  S3_CONNECT_TIMEOUT_MS: milliseconds(100, 60_000, 5_000),
  S3_REQUEST_TIMEOUT_MS: milliseconds(100, 600_000, 60_000),
  S3_OPERATION_TIMEOUT_MS: milliseconds(100, 3_600_000, 120_000),
  BLOB_CACHE_BYTES: z.coerce
    .number({ error: 'must be an integer number of bytes from 0 to 1099511627776 (1 TiB)' })
    .int('must be an integer number of bytes from 0 to 1099511627776 (1 TiB)')
    .min(0, 'must be an integer number of bytes from 0 to 1099511627776 (1 TiB)')
    .max(1024 ** 4, 'must be an integer number of bytes from 0 to 1099511627776 (1 TiB)')
    .default(1024 ** 3),
  DOWNLOAD_REDIRECT: booleanFlag.default(false),
  AUDIT_HMAC_KEY: z.string().min(32, 'must be at least 32 characters (e.g. openssl rand -hex 32)').optional(),
};

const MAX_DOCUMENT_BYTES = 48 * 1024 * 1024;

/** Variables whose value may be or contain a secret. */
/** The generic SMS provider's default body: values are JSON-escaped into the strings. */
export const DEFAULT_SMS_BODY = '{"to":"{{to}}","channel":"{{channel}}","text":"{{text}}","messageId":"{{messageId}}"}';

const SECRET_VARIABLES = new Set([
  'DATABASE_URL',
  'SMTP_URL',
  'SEAL_P12_PASSWORD',
  'PKCS11_PIN',
  'SEAL_CSC_CLIENT_SECRET',
  'SEAL_CSC_PIN',
  'AUDIT_HMAC_KEY',
  'SMS_PROVIDER_AUTHORIZATION',
  'METRICS_TOKEN',
]);

/** TRUST_ANCHORS: every certificate of the PEM bundle, as DER; an unreadable file or one without a certificate names the variable. */
function readTrustAnchors(filePath: string): Uint8Array[] {
  let text: string;
  try {
    text = fs.readFileSync(filePath, 'utf8');
  } catch (error) {
    throw new ConfigError('TRUST_ANCHORS', `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}: ${filePath})`);
  }
  const ders = [...text.matchAll(/-----BEGIN CERTIFICATE-----([^-]+)-----END CERTIFICATE-----/g)].map((match) => new Uint8Array(Buffer.from(match[1]!.replace(/\s+/g, ''), 'base64')));
  for (const der of ders) {
    try {
      new X509Certificate(der);
    } catch {
      throw new ConfigError('TRUST_ANCHORS', `holds a certificate that cannot be read (${filePath})`);
    }
  }
  if (ders.length === 0) throw new ConfigError('TRUST_ANCHORS', `holds no PEM certificate (${filePath})`);
  return ders;
}

/** SEAL_SIGNER and what it needs: each variable a signer needs is named when missing, and the other signer's refused. */
function sealSignerOf(values: Record<string, unknown>): Config['sealSigner'] {
  const pkcs11Variables = ['PKCS11_MODULE', 'PKCS11_TOKEN_LABEL', 'PKCS11_SLOT', 'PKCS11_PIN', 'PKCS11_PIN_FILE', 'PKCS11_KEY_LABEL', 'SEAL_CERT_CHAIN'] as const;
  const cscVariables = [
    'SEAL_CSC_URL',
    'SEAL_CSC_CLIENT_ID',
    'SEAL_CSC_CLIENT_SECRET',
    'SEAL_CSC_CLIENT_SECRET_FILE',
    'SEAL_CSC_CREDENTIAL_ID',
    'SEAL_CSC_PIN',
    'SEAL_CSC_PIN_FILE',
  ] as const;
  // Another signer's setting would seal with another key than the operator meant.
  if (values.SEAL_SIGNER !== 'pkcs11') {
    const stray = pkcs11Variables.find((name) => values[name] !== undefined);
    if (stray !== undefined) throw new ConfigError(stray, 'is only read with SEAL_SIGNER=pkcs11');
  }
  if (values.SEAL_SIGNER !== 'csc') {
    const stray = cscVariables.find((name) => values[name] !== undefined);
    if (stray !== undefined) throw new ConfigError(stray, 'is only read with SEAL_SIGNER=csc');
  }
  if (values.SEAL_SIGNER === 'csc') return cscSignerOf(values);
  if (values.SEAL_SIGNER !== 'pkcs11') return { kind: 'p12' };
  if (values.SEAL_P12 !== undefined) throw new ConfigError('SEAL_P12', 'must be unset with SEAL_SIGNER=pkcs11 (the key is on the token)');
  if (values.PKCS11_MODULE === undefined) throw new ConfigError('PKCS11_MODULE', 'must name the PKCS#11 module (a .so file) with SEAL_SIGNER=pkcs11');
  if ((values.PKCS11_TOKEN_LABEL === undefined) === (values.PKCS11_SLOT === undefined)) {
    throw new ConfigError('PKCS11_TOKEN_LABEL', 'exactly one of PKCS11_TOKEN_LABEL and PKCS11_SLOT must be set with SEAL_SIGNER=pkcs11');
  }
  if ((values.PKCS11_PIN === undefined) === (values.PKCS11_PIN_FILE === undefined)) {
    throw new ConfigError('PKCS11_PIN', 'exactly one of PKCS11_PIN and PKCS11_PIN_FILE must be set with SEAL_SIGNER=pkcs11');
  }
  if (values.PKCS11_KEY_LABEL === undefined) throw new ConfigError('PKCS11_KEY_LABEL', 'must name the private key (its CKA_LABEL) with SEAL_SIGNER=pkcs11');
  return {
    kind: 'pkcs11',
    modulePath: values.PKCS11_MODULE as string,
    token: values.PKCS11_TOKEN_LABEL !== undefined ? { label: values.PKCS11_TOKEN_LABEL as string } : { slot: values.PKCS11_SLOT as string },
    pin: values.PKCS11_PIN !== undefined ? { value: values.PKCS11_PIN as string } : { file: values.PKCS11_PIN_FILE as string },
    keyLabel: values.PKCS11_KEY_LABEL as string,
    certificateChainPath: values.SEAL_CERT_CHAIN as string | undefined,
  };
}

/** SEAL_SIGNER=csc: the provider, the client it registered, the credential, and (when it needs one) the PIN. */
function cscSignerOf(values: Record<string, unknown>): CscSignerConfig {
  if (values.SEAL_P12 !== undefined) throw new ConfigError('SEAL_P12', 'must be unset with SEAL_SIGNER=csc (the key is at the provider)');
  if (values.SEAL_CSC_URL === undefined) throw new ConfigError('SEAL_CSC_URL', "must name the provider's CSC API v2 base URL with SEAL_SIGNER=csc");
  if (values.SEAL_CSC_CLIENT_ID === undefined) throw new ConfigError('SEAL_CSC_CLIENT_ID', 'must name the OAuth client the provider registered, with SEAL_SIGNER=csc');
  if ((values.SEAL_CSC_CLIENT_SECRET === undefined) === (values.SEAL_CSC_CLIENT_SECRET_FILE === undefined)) {
    throw new ConfigError('SEAL_CSC_CLIENT_SECRET', 'exactly one of SEAL_CSC_CLIENT_SECRET and SEAL_CSC_CLIENT_SECRET_FILE must be set with SEAL_SIGNER=csc');
  }
  if (values.SEAL_CSC_CREDENTIAL_ID === undefined) throw new ConfigError('SEAL_CSC_CREDENTIAL_ID', "must name the seal's credential at the provider with SEAL_SIGNER=csc");
  if (values.SEAL_CSC_PIN !== undefined && values.SEAL_CSC_PIN_FILE !== undefined) throw new ConfigError('SEAL_CSC_PIN', 'at most one of SEAL_CSC_PIN and SEAL_CSC_PIN_FILE may be set');
  return {
    kind: 'csc',
    url: (values.SEAL_CSC_URL as string).replace(/\/+$/, ''),
    clientId: values.SEAL_CSC_CLIENT_ID as string,
    clientSecret: values.SEAL_CSC_CLIENT_SECRET !== undefined ? { value: values.SEAL_CSC_CLIENT_SECRET as string } : { file: values.SEAL_CSC_CLIENT_SECRET_FILE as string },
    credentialId: values.SEAL_CSC_CREDENTIAL_ID as string,
    pin: values.SEAL_CSC_PIN !== undefined ? { value: values.SEAL_CSC_PIN as string } : values.SEAL_CSC_PIN_FILE !== undefined ? { file: values.SEAL_CSC_PIN_FILE as string } : undefined,
  };
}

/**
 * Parses and validates the environment. Empty strings count as unset, so `FOO=` in a .env file
 * means "use the default". Throws a `ConfigError` naming the first bad variable.
 */
export function loadConfig(environment: Record<string, string | undefined> = process.env): Config {
  const values: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(variables)) {
    const raw = environment[name];
    const result = (schema as z.ZodType).safeParse(raw === '' ? undefined : raw);
    if (!result.success) {
      // A secret (or a URL that may carry a password) is never repeated into the log.
      const shown = raw === undefined || SECRET_VARIABLES.has(name) ? '' : ` (got ${JSON.stringify(raw.length > 60 ? `${raw.slice(0, 60)}…` : raw)})`;
      throw new ConfigError(name, `${result.error.issues[0]?.message ?? 'is invalid'}${shown}`);
    }
    values[name] = result.data;
  }
  if (values.SEAL_P12 !== undefined && values.SEAL_P12_PASSWORD === undefined) {
    throw new ConfigError('SEAL_P12_PASSWORD', 'must be set when SEAL_P12 is set');
  }
  const sealSigner = sealSignerOf(values);
  type S3Url = { kind: 's3'; bucket: string; prefix: string };
  const storeUrl = values.BLOB_STORE_URL as { kind: 'file' } | S3Url | undefined;
  const blobStore: Config['blobStore'] =
    storeUrl?.kind === 's3'
      ? {
          ...storeUrl,
          endpoint: values.S3_ENDPOINT as string | undefined,
          region: values.S3_REGION as string,
          forcePathStyle: values.S3_FORCE_PATH_STYLE as boolean,
          deadlines: { connectMs: values.S3_CONNECT_TIMEOUT_MS as number, requestMs: values.S3_REQUEST_TIMEOUT_MS as number, operationMs: values.S3_OPERATION_TIMEOUT_MS as number },
        }
      : { kind: 'file' };
  // Files under DATA_DIR have no URL of their own to send a browser to.
  if (values.DOWNLOAD_REDIRECT === true && blobStore.kind !== 's3') {
    throw new ConfigError('DOWNLOAD_REDIRECT', 'needs an object store (BLOB_STORE_URL=s3://BUCKET); with files under DATA_DIR the service serves downloads itself, so leave it unset');
  }
  const port = values.PORT as number;
  // Two servers cannot share a port; 0 (any free port, tests) may be asked of both.
  if (values.METRICS_PORT !== undefined && values.METRICS_PORT !== 0 && values.METRICS_PORT === port) {
    throw new ConfigError('METRICS_PORT', `must differ from PORT (both are ${port})`);
  }
  const publicUrl = ((values.PUBLIC_URL as string | undefined) ?? `http://localhost:${port}`).replace(/\/+$/, '');
  return {
    port,
    host: values.HOST as string | undefined,
    publicUrl,
    databaseUrl: values.DATABASE_URL as string | undefined,
    dataDir: path.resolve(values.DATA_DIR as string),
    smtpUrl: values.SMTP_URL as string | undefined,
    smsProvider:
      values.SMS_PROVIDER_URL === undefined
        ? undefined
        : {
            url: values.SMS_PROVIDER_URL as string,
            authorization: values.SMS_PROVIDER_AUTHORIZATION as string | undefined,
            bodyTemplate: (values.SMS_PROVIDER_BODY as string | undefined) ?? DEFAULT_SMS_BODY,
          },
    mailFrom: (values.MAIL_FROM as string | undefined) ?? `no-reply@${new URL(publicUrl).hostname}`,
    mailAttachmentLimitBytes: values.MAIL_ATTACHMENT_LIMIT_BYTES as number,
    deliveryHistoryRetentionDays: values.DELIVERY_HISTORY_RETENTION_DAYS as number,
    sealP12Path: values.SEAL_P12 as string | undefined,
    sealP12Password: values.SEAL_P12_PASSWORD as string | undefined,
    sealSigner,
    trustAnchors: values.TRUST_ANCHORS === undefined ? [] : readTrustAnchors(values.TRUST_ANCHORS as string),
    tsaUrl: values.TSA_URL as string | undefined,
    logLevel: values.LOG_LEVEL as Config['logLevel'],
    tracing:
      (values.OTEL_EXPORTER_OTLP_ENDPOINT ?? values.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) === undefined || values.OTEL_SDK_DISABLED
        ? undefined
        : { serviceName: values.OTEL_SERVICE_NAME as string },
    restErrorsHttp200: values.REST_ERRORS_HTTP_200 as boolean,
    sandboxClock: values.SANDBOX_CLOCK as boolean,
    outboxWorker: values.OUTBOX_WORKER as boolean,
    maxDocumentBytes: MAX_DOCUMENT_BYTES,
    databaseAcquireTimeoutMs: values.DATABASE_ACQUIRE_TIMEOUT_MS as number,
    auditHmacKey: values.AUDIT_HMAC_KEY as string | undefined,
    trustedProxyHops: values.TRUST_PROXY_HOPS as number,
    graphqlJit: values.GRAPHQL_JIT as boolean,
    graphqlPassThrough: values.GRAPHQL_PASS_THROUGH as boolean,
    graphqlLiveLean: values.GRAPHQL_LIVE_LEAN as boolean,
    graphqlIntrospection: values.GRAPHQL_INTROSPECTION as boolean,
    databasePreparedStatements: values.DATABASE_PREPARED_STATEMENTS as boolean,
    rateLimits: {
      apiKey: values.RATE_LIMIT_PER_MINUTE as number,
      client: values.RATE_LIMIT_ANONYMOUS_PER_MINUTE as number,
      signingToken: values.RATE_LIMIT_SIGNING_PER_MINUTE as number,
      signingPage: values.RATE_LIMIT_SIGNING_PAGES_PER_MINUTE as number,
      publicLink: values.RATE_LIMIT_PUBLIC_LINK_PER_MINUTE as number,
      publicLinkAddress: values.RATE_LIMIT_PUBLIC_LINK_ADDRESS_PER_MINUTE as number,
    },
    rateLimitRefusalHoldMs: values.RATE_LIMIT_REFUSAL_HOLD_MS as number,
    readsInFlightPerKey: values.READS_IN_FLIGHT_PER_KEY as number,
    apiKeyCacheTtlMs: values.API_KEY_CACHE_TTL_MS as number,
    subscriptionsPerKey: values.SUBSCRIPTIONS_PER_KEY as number,
    phoneMessagesPerDay: values.PHONE_MESSAGES_PER_DAY as number,
    bulkSendRowsInFlight: values.BULK_SEND_ROWS_IN_FLIGHT as number,
    bulkSendRowsPerMinute: values.BULK_SEND_ROWS_PER_MINUTE as number,
    signingFrameAncestors: (values.SIGNING_FRAME_ANCESTORS as string[] | undefined) ?? [],
    webhookAllowPrivate: values.WEBHOOK_ALLOW_PRIVATE as boolean,
    webhookTimeoutMs: values.WEBHOOK_TIMEOUT_MS as number,
    metricsPort: values.METRICS_PORT as number | undefined,
    metricsToken: values.METRICS_TOKEN as string | undefined,
    blobStore,
    blobCacheBytes: values.BLOB_CACHE_BYTES as number,
    downloadRedirect: values.DOWNLOAD_REDIRECT as boolean,
  };
}
