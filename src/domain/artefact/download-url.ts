/**
 * Short-lived signed download URLs (GraphQL `downloadUrl`): a browser fetches the file without the
 * key header. The URL carries the team, the key that asked (the audit event's actor), the envelope,
 * the document (or none for the ZIP) and an expiry, MACed with a key derived from the audit key
 * (AUDIT_HMAC_KEY, shared by every instance). Anyone holding the URL can fetch the file until it
 * expires (5 minutes), as with any bearer link; every fetch is recorded as `artefact.downloaded`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { DomainError } from '../../shared/errors.ts';
import type { TeamCaller } from '../team/team-caller.ts';

export const DOWNLOAD_URL_TTL_SECONDS = 300;

/** `Download.InvalidLink`: the signed download URL is malformed, altered, or expired. */
export class DownloadLinkInvalidError extends DomainError {
  constructor(reason: 'malformed' | 'expired') {
    super('Download.InvalidLink', reason === 'expired' ? 'This download link has expired; ask for a new one.' : 'This download link is not valid.', { reason });
  }
}

/** `f`: a signer's attachment (its file id) instead of a document. */
type Claims = { t: string; w: string; k: string; e: string; d: string | null; x: number; a?: string; c?: 1; v?: 1; f?: string };

function macKey(auditKey: Buffer): Buffer {
  return createHmac('sha256', auditKey).update('download-url-v1').digest();
}

function mac(auditKey: Buffer, payload: string): string {
  return createHmac('sha256', macKey(auditKey)).update(payload).digest('base64url');
}

export function signDownloadToken(
  auditKey: Buffer,
  caller: TeamCaller,
  target: { envelopeId: string; documentId: string | null; auditLocale?: string; current?: boolean; evidence?: boolean; attachmentId?: string },
  expiresAt: Date,
): string {
  const claims: Claims = { t: caller.teamId, w: caller.workspaceId, k: caller.apiKeyId, e: target.envelopeId, d: target.documentId, x: Math.floor(expiresAt.getTime() / 1000) };
  if (target.auditLocale !== undefined) claims.a = target.auditLocale;
  if (target.current === true) claims.c = 1;
  if (target.evidence === true) claims.v = 1;
  if (target.attachmentId !== undefined) claims.f = target.attachmentId;
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${payload}.${mac(auditKey, payload)}`;
}

export function verifyDownloadToken(
  auditKey: Buffer,
  token: string,
  now: Date,
): { caller: TeamCaller; envelopeId: string; documentId: string | null; auditLocale: string | undefined; current: boolean; evidence: boolean; attachmentId: string | undefined } {
  const [payload, signature, ...rest] = token.split('.');
  if (payload === undefined || signature === undefined || rest.length > 0) throw new DownloadLinkInvalidError('malformed');
  const expected = Buffer.from(mac(auditKey, payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw new DownloadLinkInvalidError('malformed');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Claims;
  if (claims.x * 1000 <= now.getTime()) throw new DownloadLinkInvalidError('expired');
  return {
    caller: { teamId: claims.t, workspaceId: claims.w, apiKeyId: claims.k },
    envelopeId: claims.e,
    documentId: claims.d,
    auditLocale: claims.a,
    current: claims.c === 1,
    evidence: claims.v === 1,
    attachmentId: claims.f,
  };
}
