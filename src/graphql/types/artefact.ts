import { issueAuditPdfUrl, issueDownloadUrl } from '../../domain/artefact/download.service.ts';
import { builder } from '../builder.ts';

const DownloadUrl = builder.objectRef<{ url: string; expiresAt: Date }>('DownloadUrl').implement({
  description: 'A short-lived signed URL a browser can fetch without the key header.',
  fields: (t) => ({
    url: t.exposeString('url', { description: 'GET it for the file (application/pdf, or application/zip for the whole envelope).' }),
    expiresAt: t.field({ type: 'DateTime', resolve: (link) => link.expiresAt }),
  }),
});

builder.queryField('downloadUrl', (t) =>
  t.field({
    type: DownloadUrl,
    description:
      'A signed URL, valid for 5 minutes, for one document’s PDF (REST: GET /envelopes/{id}/documents/{documentId}/pdf) or, without documentId, ' +
      'the ZIP of every document (GET /envelopes/{id}/pdf). Before finalization the files are draft copies; after it, the sealed files. ' +
      'Each fetch is recorded as artefact.downloaded.',
    args: { envelopeId: t.arg.id({ required: true }), documentId: t.arg.id({ required: false }) },
    resolve: (_root, args, context) =>
      issueDownloadUrl(context, { envelopeId: String(args.envelopeId), documentId: args.documentId === null || args.documentId === undefined ? null : String(args.documentId) }),
  }),
);

const AuditPdfLocaleEnum = builder.enumType('AuditPdfLocale', {
  description: 'The language of the audit-log PDF.',
  values: { EN_US: { value: 'en-US' }, TR_TR: { value: 'tr-TR' } } as const,
});

builder.queryField('auditLogPdfUrl', (t) =>
  t.field({
    type: DownloadUrl,
    description:
      'A signed URL, valid for 5 minutes, for the sealed audit-log PDF (REST: GET /envelopes/{id}/audit/pdf?locale=). Only for finalized, voided or expired envelopes: ' +
      'Envelope.NotFinalized otherwise, with the status in context.',
    args: { envelopeId: t.arg.id({ required: true }), locale: t.arg({ type: AuditPdfLocaleEnum, required: false }) },
    resolve: (_root, args, context) => issueAuditPdfUrl(context, { envelopeId: String(args.envelopeId), locale: args.locale ?? 'en-US' }),
  }),
);
