/**
 * Final-copy links: a recipient's own link to the sealed documents of a finalized envelope, for
 * the completion mail (long-lived, FINAL_COPY_LINK_TTL_SECONDS) and the signing page's finalized
 * screen (a few minutes). The signing link itself dies when the envelope closes, so the copy
 * needs a credential of its own: the envelope, the recipient and the agent (the audit event's
 * actor) and an expiry, MACed with a key derived from the audit key under a label of its own, so
 * a team download URL can never pass for one of these, nor the other way round.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { DownloadLinkInvalidError } from './download-url.ts';

/** How long the completion mail's link works: long enough to come back to the mail later. */
export const FINAL_COPY_LINK_TTL_SECONDS = 30 * 24 * 60 * 60;

export type FinalCopyTarget = { envelopeId: string; recipientId: string; agentId: string };

type Claims = { e: string; r: string; g: string; x: number };

function mac(auditKey: Buffer, payload: string): string {
  const key = createHmac('sha256', auditKey).update('final-copy-link-v1').digest();
  return createHmac('sha256', key).update(payload).digest('base64url');
}

/** The signed part of the link (`{publicUrl}/api/v1/key/final-copy/{signed}`). */
export function signFinalCopyLink(auditKey: Buffer, target: FinalCopyTarget, expiresAt: Date): string {
  const claims: Claims = { e: target.envelopeId, r: target.recipientId, g: target.agentId, x: Math.floor(expiresAt.getTime() / 1000) };
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${payload}.${mac(auditKey, payload)}`;
}

/** The target of a link this service signed and that has not expired; else `Download.InvalidLink` (malformed or expired). */
export function verifyFinalCopyLink(auditKey: Buffer, signed: string, now: Date): FinalCopyTarget {
  const [payload, signature, ...rest] = signed.split('.');
  if (!payload || !signature || rest.length > 0) throw new DownloadLinkInvalidError('malformed');
  const expected = Buffer.from(mac(auditKey, payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw new DownloadLinkInvalidError('malformed');
  let claims: Partial<Claims>;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Partial<Claims>;
  } catch {
    throw new DownloadLinkInvalidError('malformed');
  }
  if (typeof claims.e !== 'string' || typeof claims.r !== 'string' || typeof claims.g !== 'string' || typeof claims.x !== 'number') throw new DownloadLinkInvalidError('malformed');
  if (claims.x * 1000 <= now.getTime()) throw new DownloadLinkInvalidError('expired');
  return { envelopeId: claims.e, recipientId: claims.r, agentId: claims.g };
}

/** The link's full URL under the service's public address. */
export function finalCopyUrl(publicUrl: string, signed: string): string {
  return `${publicUrl}/api/v1/key/final-copy/${signed}`;
}

/** The completion mail's link maker (mail.handlers.ts `finalCopyLink`): valid FINAL_COPY_LINK_TTL_SECONDS. */
export function finalCopyLinkMaker(auditKey: Buffer, publicUrl: string) {
  return (target: FinalCopyTarget, now: Date): { url: string; expiresAt: Date } => {
    const expiresAt = new Date(now.getTime() + FINAL_COPY_LINK_TTL_SECONDS * 1000);
    return { url: finalCopyUrl(publicUrl, signFinalCopyLink(auditKey, target, expiresAt)), expiresAt };
  };
}
