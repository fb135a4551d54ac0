/**
 * The seal's reason names the envelope and the document: how `verify` tells, offline, which
 * envelope and document a sealed file belongs to. Written by the seal job, read by the verifier
 * (in a PDF worker), so it lives apart from both.
 */
export function sealReason(envelopeId: string, documentId: string): string {
  return `Sealed by the envelope service: envelope ${envelopeId}, document ${documentId}`;
}

export const SEAL_REASON_PATTERN = /envelope ([0-9a-f-]{36}), document ([0-9a-f-]{36})/;
