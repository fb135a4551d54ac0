/**
 * `GET /envelopes/{id}/audit/pdf`: the sealed audit-log PDF of a closed envelope, produced on
 * request (the trail keeps growing with downloads, so a stored copy would soon be stale) in a PDF
 * worker thread. See audit-pdf.ts for what it holds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { appendAuditEvent, verifyEnvelopeAuditChain } from '../audit/audit.service.ts';
import { EnvelopeAuditNotFoundError, EnvelopeNotFinalizedError, EnvelopeNotFoundError } from '../envelope/envelope.errors.ts';
import type { EnvelopeStatus } from '../envelope/envelope.entity.ts';
import { summariseBiometricValue } from '../field/field-values.ts';
import type { ServiceContext } from '../service-context.ts';
import { InvalidRequestError } from '../../shared/errors.ts';
import { auditPdfLocales, type AuditPdfData, type AuditPdfLocale } from '../pdf/audit-pdf-layout.ts';
import type { Download } from './download.ts';
import { isClosedEnvelopeStatus } from '../envelope/envelope.entity.ts';
import { teamEnvelopes, wellFormedEnvelopeId } from '../envelope/team-envelope.ts';
import { sql } from 'kysely';


const iso = (value: Date | string | null): string | null => (value === null ? null : new Date(value).toISOString());

/** The locale asked for: `locale` (en-US or tr-TR, refused otherwise), else Accept-Language, else en-US. */
export function auditPdfLocaleOf(query: string | null, acceptLanguage: string | null): AuditPdfLocale {
  if (query !== null) {
    if (!(auditPdfLocales as readonly string[]).includes(query)) {
      throw new InvalidRequestError([{ path: 'locale', message: `must be one of ${auditPdfLocales.join(', ')}` }]);
    }
    return query as AuditPdfLocale;
  }
  return /^\s*tr\b/i.test(acceptLanguage ?? '') ? 'tr-TR' : 'en-US';
}

export async function auditLogPdf(context: ServiceContext, options: { envelopeId: string; locale: AuditPdfLocale }): Promise<Download> {
  const caller = await context.caller();
  const reader = context.reader;
  const row = await teamEnvelopes(context.reader, caller.teamId)
    .select(['e.id', 'e.name', 'e.status', 'e.created_at', 'e.sent_at', 'e.completed_at', 'e.voided_at', 'e.void_reason'])
    .where('e.id', '=', wellFormedEnvelopeId(options.envelopeId))
    .executeTakeFirst();
  const envelope = row && { ...row, status: row.status as EnvelopeStatus };
  if (envelope === undefined) throw new EnvelopeNotFoundError(options.envelopeId);
  if (!isClosedEnvelopeStatus(envelope.status)) throw new EnvelopeNotFinalizedError(envelope.id, envelope.status);

  const [documents, recipients, events, biometricFields, chain] = await Promise.all([
    reader
      .selectFrom('document')
      .select(['id', 'name', 'page_count', 'content_sha256', 'sealed_sha256'])
      .where('envelope_id', '=', envelope.id)
      .orderBy('order')
      .orderBy('id')
      .execute(),
    reader
      .selectFrom('recipient as r')
      .select((eb) => [
        'r.id',
        'r.role_name',
        'r.type',
        'r.order',
        'r.completed_at',
        'r.declined_at',
        eb.fn
          .coalesce(
            eb
              .selectFrom('agent as a')
              .select(sql<{ info: any; snapshot: any[] | null }[]>`json_agg(json_build_object('info', a.info, 'snapshot', a.snapshot) order by a.position)`.as('agents'))
              .whereRef('a.recipient_id', '=', 'r.id')
              .where('a.revoked_at', 'is', null),
            sql<{ info: any; snapshot: any[] | null }[]>`'[]'::json`,
          )
          .as('agents'),
      ])
      .where('r.envelope_id', '=', envelope.id)
      .where('r.removed_at', 'is', null)
      .orderBy('r.order')
      .orderBy('r.created_at')
      .orderBy('r.id')
      .execute(),
    reader
      .selectFrom('audit_event')
      .select(['seq', 'at', 'type', 'actor_type', 'actor_id', 'ip', 'user_agent', 'details', 'hash'])
      .where('stream_id', '=', envelope.id)
      .orderBy('seq')
      .execute(),
    reader
      .selectFrom('field')
      .select(['identifier', sql<Record<string, unknown>>`value`.as('value')])
      .where('envelope_id', '=', envelope.id)
      .where('type', '=', 'biometric_signature')
      .where('value', 'is not', null)
      .orderBy('identifier')
      .execute(),
    verifyEnvelopeAuditChain(context, { envelopeId: envelope.id }),
  ]);
  if (events.length === 0) throw new EnvelopeAuditNotFoundError(envelope.id);

  const data: AuditPdfData = {
    generatedAt: context.clock.now().toISOString(),
    envelope: {
      id: envelope.id,
      name: envelope.name,
      status: envelope.status,
      createdAt: iso(envelope.created_at)!,
      sentAt: iso(envelope.sent_at),
      completedAt: iso(envelope.completed_at),
      voidedAt: iso(envelope.voided_at),
      voidReason: envelope.void_reason,
    },
    documents: documents.map((document) => ({ id: document.id, name: document.name, pageCount: document.page_count, originalSha256: document.content_sha256, sealedSha256: document.sealed_sha256 })),
    recipients: recipients.map((recipient) => ({
      id: recipient.id,
      roleName: recipient.role_name,
      type: recipient.type,
      order: recipient.order,
      completedAt: iso(recipient.completed_at),
      declinedAt: iso(recipient.declined_at),
      agents: recipient.agents.flatMap((agent) => (agent.snapshot ?? [agent.info]).filter(Boolean).map((person: any) => ({ name: person.name ?? null, email: person.email ?? null, phone: person.phone ?? null }))),
    })),
    events: events.map((event) => ({
      seq: event.seq,
      at: iso(event.at)!,
      type: event.type,
      actor: event.actor_id === null ? event.actor_type : `${event.actor_type} ${event.actor_id}`,
      ip: event.ip,
      userAgent: event.user_agent,
      details: event.details,
      hash: event.hash,
    })),
    biometrics: biometricFields.map((field) => {
      const summary = summariseBiometricValue(field.value);
      const pressures = (field.value.strokes as { p: number }[][]).flat().map((point) => point.p);
      return {
        fieldIdentifier: field.identifier,
        strokes: summary.strokeCount,
        points: summary.pointCount,
        durationMs: summary.durationMs,
        pressureMin: Math.min(...pressures),
        pressureMax: Math.max(...pressures),
        strokesSha256: summary.strokesSha256,
      };
    }),
    chain: chain.valid
      ? { valid: true, length: chain.length, headHash: chain.headHash, brokenAtSeq: null }
      : { valid: false, length: events.length, headHash: events.at(-1)!.hash, brokenAtSeq: chain.brokenAtSeq },
  };

  const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'audit-pdf-'));
  const outputPath = path.join(directory, 'audit.pdf');
  try {
    await context.pdfWorkers.auditPdf({
      data,
      locale: options.locale,
      outputPath,
      seal: {
        material: { keyPkcs8: context.seal.keyPkcs8, certificates: context.seal.certificates },
        info: { reason: `Audit log sealed by the envelope service: envelope ${envelope.id}`, name: 'Envelope service', location: context.publicUrl, signingTime: context.clock.now(), tsaUrl: context.seal.tsaUrl },
      },
    });
  } catch (error) {
    await fs.promises.rm(directory, { recursive: true, force: true });
    throw error;
  }
  await context.em.fork().transactional(async (tx) => {
    await appendAuditEvent(tx, context.auditKey, {
      teamId: caller.teamId,
      envelopeId: envelope.id,
      type: 'artefact.downloaded',
      actor: { type: 'api_key', id: caller.apiKeyId },
      request: context.metadata,
      details: { format: 'audit-pdf', locale: options.locale, chainHead: data.chain.headHash },
      at: context.clock.now(),
    });
  });
  const stream = fs.createReadStream(outputPath);
  stream.once('close', () => void fs.promises.rm(directory, { recursive: true, force: true }));
  return { fileName: `audit-${envelope.id}.pdf`, contentType: 'application/pdf', stream, sealed: true };
}
