import type { RenderAppendix } from './appendix.ts';
import type { AuditPdfData, AuditPdfLocale } from './audit-pdf-layout.ts';
import type { FoundFormField } from './form-fields.ts';
import type { PdfComplexity, PdfInspection, PdfInspectionFailureReason } from './inspect/inspect.ts';
import type { MergeDrawing } from './merge-draw.ts';
import type { RenderField, RenderStamp } from './render.ts';
import type { SealInfo, SealMaterial } from './seal.ts';
import type { FoundTag } from './text-tags.ts';
import type { PdfVerification } from './verify.ts';

/** Draw field values into a PDF (and seal it), reading `sourcePath` and writing `outputPath`. */
export type RenderTask = {
  kind: 'render';
  sourcePath: string;
  outputPath: string;
  fields: RenderField[];
  draft: boolean;
  /** The draft band's text (escrowed copies carry their own, in the recipient's language). */
  draftLabel?: string;
  /** Visible stamps (sealed copies of an envelope with stamps on). */
  stamp?: RenderStamp;
  seal?: { material: SealMaterial; info: SealInfo };
  /** Signers' attachments to append as pages after the document's own (sealed copies). */
  appendices?: RenderAppendix[];
  /**
   * Only this page (index from 0), written as a one-page PDF of its own: what the signing page
   * fetches page by page (escrowed copies, issue 37). Not with `seal` or `appendices`.
   */
  onlyPage?: number;
};

/**
 * A signer's signature at a trust service (issue 35), first half: draw the values not yet in the
 * file (`sourcePath`: the original, or the file as the last signer signed it) and add the signer's
 * placeholder, as an incremental update of a file that has one; answers the SHA-256 of what the
 * placeholder's /ByteRange covers.
 */
export type PrepareSignatureTask = {
  kind: 'prepare-signature';
  sourcePath: string;
  outputPath: string;
  fields: RenderField[];
  signature: { certificates: Uint8Array[]; info: SealInfo };
};

/** Second half: the CMS around the provider's signature, written into the prepared file's placeholder. */
export type EmbedSignatureTask = { kind: 'embed-signature'; sourcePath: string; outputPath: string; certificates: Uint8Array[]; signature: Uint8Array; tsaUrl?: string };

/** Seal a PDF made on the main thread's behalf (the audit log), reading and writing files. */
export type SealTask = { kind: 'seal'; sourcePath: string; outputPath: string; seal: { material: SealMaterial; info: SealInfo } };

/** Lay out and seal the audit-log PDF. */
export type AuditPdfTask = { kind: 'audit-pdf'; data: AuditPdfData; locale: AuditPdfLocale; outputPath: string; seal: { material: SealMaterial; info: SealInfo } };

/** Check a sealed PDF's signatures (pdf/verify.ts). */
export type VerifyTask = { kind: 'verify'; path: string; ourCertificateSha256: string[]; trustAnchors?: Uint8Array[] };

/** Read what fields can be placed from: the text tags (at most `maxTags`) or the form fields of a PDF. */
export type ReadPlacementsTask = { kind: 'read-placements'; path: string; from: 'tags' | 'acroform'; maxTags: number };

/** What a PDF offers for placing fields (pdf/text-tags.ts, pdf/form-fields.ts). */
export type PlacementSources = { from: 'tags'; tags: FoundTag[]; operatorCounts: number[]; tooMany: boolean } | { from: 'acroform'; formFields: FoundFormField[] };

/** Write a copy of a PDF without the given tags' text and without the given form fields. */
export type ApplyPlacementsTask = {
  kind: 'apply-placements';
  sourcePath: string;
  outputPath: string;
  hideTags?: { tags: FoundTag[]; operatorCounts: number[] };
  removeFormFields?: string[];
  /** Merged data drawn where its (hidden) tags stood (pdf/merge-draw.ts). */
  drawValues?: MergeDrawing[];
};

/** What the pool sends a PDF worker: one task at a time. */
export type PdfTask = { id: number } & (
  | { kind: 'inspect'; path: string }
  | RenderTask
  | PrepareSignatureTask
  | EmbedSignatureTask
  | SealTask
  | AuditPdfTask
  | VerifyTask
  | ReadPlacementsTask
  | ApplyPlacementsTask
);

/**
 * What a worker sends after each task: the answer, and how much memory the thread holds then
 * (its V8 heap and the memory outside it: Buffers, ArrayBuffers), for the pool to decide whether
 * to recycle the thread.
 */
export type PdfWorkerReply = PdfTaskAnswer & { memoryBytes: number };

/** What a worker answers, always with the task's id. */
export type PdfTaskAnswer =
  | { id: number; outcome: 'done'; inspection: PdfInspection }
  | { id: number; outcome: 'written'; byteSize: number }
  | { id: number; outcome: 'prepared'; byteSize: number; contentDigest: Uint8Array }
  | { id: number; outcome: 'verified'; verification: PdfVerification }
  | { id: number; outcome: 'placements'; sources: PlacementSources }
  | { id: number; outcome: 'placed'; byteSize: number; notHidden: string[] }
  | { id: number; outcome: 'refused'; reason: PdfInspectionFailureReason; detail: string; complexity?: PdfComplexity }
  | { id: number; outcome: 'failed'; message: string; code: string | undefined };

/**
 * A worker sealing with a key it does not hold (a token's: SEAL_SIGNER=pkcs11) asks the pool for
 * the signature of one digest during its task; the pool asks the task's `signDigest` and answers.
 */
export type SignDigestRequest = { signDigest: { requestId: number; taskId: number; digest: Uint8Array } };
export type SignDigestReply = { signedDigest: { requestId: number; signature: Uint8Array } } | { signedDigest: { requestId: number; error: string; code: string | undefined } };
