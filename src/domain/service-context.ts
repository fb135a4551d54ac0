import type { EntityManager } from '@mikro-orm/postgresql';
import type { BlobStore } from '../shared/blob-store/index.ts';
import type { Clock } from '../shared/clock.ts';
import type { RequestMetadata } from '../shared/request-metadata.ts';
import type { SealCertificate } from './artefact/seal-certificate.ts';
import type { PdfWorkers } from './pdf/worker-pool.ts';
import type { ReadDb } from './read-model.ts';
import type { TeamCaller } from './team/team-caller.ts';

/**
 * What every domain service receives from either face: a request-scoped entity manager, the
 * authenticated caller (resolved lazily), the request's metadata for the audit log, and the
 * process-wide parts (clock, blob store, audit key, limits, PDF workers).
 */
export type ServiceContext = {
  em: EntityManager;
  /**
   * The read model's query builder on the connection pool: reads see committed data and need no
   * unit of work (or entity manager fork) of their own.
   */
  reader: ReadDb;
  caller(): Promise<TeamCaller>;
  metadata: RequestMetadata;
  clock: Clock;
  blobStore: BlobStore;
  /** DOWNLOAD_REDIRECT: stored sealed PDFs are answered with a presigned URL of the object store. */
  downloadRedirect: boolean;
  auditKey: Buffer;
  /** Base of the links the service sends (signing links): PUBLIC_URL. */
  publicUrl: string;
  /** SIGNING_FRAME_ANCESTORS: origins that may frame signing pages when a team names none of its own (issue 21). */
  signingFrameAncestors: readonly string[];
  /** SANDBOX_CLOCK: whether callers may move the clock (docs/reference/contract.md §8). */
  sandboxClock: boolean;
  /** Webhook URL policy: WEBHOOK_ALLOW_PRIVATE lets endpoints name loopback and private addresses (development, tests). */
  webhooks: { allowPrivate: boolean };
  /** The `X-Signing-Token` header: the recipient side's credential (docs/reference/contract.md §7). */
  signingToken: string | undefined;
  /** maxDocumentBytes: uploads; phoneMessagesPerDay: SMS/WhatsApp per person in 24 h (0: no cap). */
  limits: { maxDocumentBytes: number; phoneMessagesPerDay: number };
  /** Worker threads for PDF work (inspection): no PDF is ever parsed on the event loop. */
  pdfWorkers: PdfWorkers;
  /** The sealing certificate: final PDFs and audit-log PDFs carry its PAdES seal. */
  seal: SealCertificate;
  /** TRUST_ANCHORS (DER): what `POST /verify` validates signers' chains up to. */
  trustAnchors: readonly Uint8Array[];
};
