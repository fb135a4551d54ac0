/**
 * The audit-log PDF (docs/reference/interface-spec.md §4.6, docs/reference/workflow.md "Audit"): the envelope, its documents with the
 * SHA-256 of the original and of the sealed file, recipients and agents, every audit event, the
 * biometric summaries, and the chain head with how to verify it; en-US or tr-TR. Laid out here,
 * in a PDF worker thread, and sealed like the documents.
 */
import { PDFDocument, rgb, type PDFPage } from 'pdf-lib';
import { drawTextLine, embedSans, wrapText, type TextFamily } from './render.ts';

export type AuditPdfLocale = 'en-US' | 'tr-TR';
export const auditPdfLocales: readonly AuditPdfLocale[] = ['en-US', 'tr-TR'];

export type AuditPdfData = {
  generatedAt: string;
  envelope: { id: string; name: string; status: string; createdAt: string; sentAt: string | null; completedAt: string | null; voidedAt: string | null; voidReason: string | null };
  documents: { id: string; name: string; pageCount: number; originalSha256: string; sealedSha256: string | null }[];
  recipients: { id: string; roleName: string; type: string; order: number; completedAt: string | null; declinedAt: string | null; agents: { name: string | null; email: string | null; phone: string | null }[] }[];
  events: { seq: number; at: string; type: string; actor: string; ip: string | null; userAgent: string | null; details: unknown; hash: string }[];
  biometrics: { fieldIdentifier: string; strokes: number; points: number; durationMs: number; pressureMin: number; pressureMax: number; strokesSha256: string }[];
  chain: { valid: boolean; length: number; headHash: string | null; brokenAtSeq: number | null };
};

const text = {
  'en-US': {
    title: 'Audit log',
    envelope: 'Envelope',
    id: 'Id',
    name: 'Name',
    status: 'Status',
    created: 'Created',
    sent: 'Sent',
    completed: 'Completed',
    voided: 'Voided',
    voidReason: 'Reason',
    documents: 'Documents',
    pages: 'pages',
    original: 'Original SHA-256',
    sealed: 'Sealed SHA-256',
    notSealed: 'not sealed',
    recipients: 'Recipients and agents',
    order: 'order',
    declined: 'declined',
    events: 'Events (UTC)',
    actor: 'actor',
    ip: 'IP',
    userAgent: 'user agent',
    biometrics: 'Biometric signatures',
    biometricLine: (b: AuditPdfData['biometrics'][number]) =>
      `${b.fieldIdentifier}: ${b.strokes} strokes, ${b.points} points, ${b.durationMs} ms, pressure ${b.pressureMin}–${b.pressureMax}, strokes SHA-256 ${b.strokesSha256}`,
    chain: 'Hash chain',
    chainValid: (length: number) => `The chain of ${length} events verifies.`,
    chainBroken: (seq: number) => `The chain is broken at event ${seq}.`,
    head: 'Chain head',
    howToVerify:
      'Each event hash is an HMAC-SHA256 over the previous hash and the event’s canonical content, keyed by the service. ' +
      'Verify with GET /api/v1/key/envelopes/{id}/audit/verify, the GraphQL query verifyAuditChain, or npm run cli -- audit verify; ' +
      'this file’s PAdES seal is checked with npm run cli -- verify FILE.pdf or any PDF signature validator.',
    generated: 'Generated',
    page: 'Page',
    none: 'none',
  },
  'tr-TR': {
    title: 'Denetim kaydı',
    envelope: 'Zarf',
    id: 'Kimlik',
    name: 'Ad',
    status: 'Durum',
    created: 'Oluşturulma',
    sent: 'Gönderilme',
    completed: 'Tamamlanma',
    voided: 'İptal',
    voidReason: 'Gerekçe',
    documents: 'Belgeler',
    pages: 'sayfa',
    original: 'Özgün SHA-256',
    sealed: 'Mühürlü SHA-256',
    notSealed: 'mühürlenmedi',
    recipients: 'Alıcılar ve temsilciler',
    order: 'sıra',
    declined: 'reddetti',
    events: 'Olaylar (UTC)',
    actor: 'işlemi yapan',
    ip: 'IP',
    userAgent: 'tarayıcı',
    biometrics: 'Biyometrik imzalar',
    biometricLine: (b: AuditPdfData['biometrics'][number]) =>
      `${b.fieldIdentifier}: ${b.strokes} çizgi, ${b.points} nokta, ${b.durationMs} ms, basınç ${b.pressureMin}–${b.pressureMax}, çizgilerin SHA-256 özeti ${b.strokesSha256}`,
    chain: 'Özet zinciri',
    chainValid: (length: number) => `${length} olaylık zincir doğrulanıyor.`,
    chainBroken: (seq: number) => `Zincir ${seq}. olayda kırık.`,
    head: 'Zincirin başı',
    howToVerify:
      'Her olayın özeti, önceki özet ile olayın kanonik içeriği üzerinden hizmetin anahtarıyla hesaplanan HMAC-SHA256 değeridir. ' +
      'Doğrulama: GET /api/v1/key/envelopes/{id}/audit/verify, GraphQL verifyAuditChain sorgusu veya npm run cli -- audit verify; ' +
      'bu dosyanın PAdES mührü npm run cli -- verify FILE.pdf ya da herhangi bir PDF imza doğrulayıcısıyla denetlenir.',
    generated: 'Oluşturulma zamanı',
    page: 'Sayfa',
    none: 'yok',
  },
} as const;

const A4: [number, number] = [595.28, 841.89];
const margin = 48;

/** A cursor writing wrapped lines down A4 pages, starting a new page when one is full. */
class Writer {
  readonly pdf: PDFDocument;
  readonly font: TextFamily;
  page!: PDFPage;
  y = 0;

  constructor(pdf: PDFDocument, font: TextFamily) {
    this.pdf = pdf;
    this.font = font;
    this.newPage();
  }

  newPage() {
    this.page = this.pdf.addPage(A4);
    this.y = A4[1] - margin;
  }

  line(content: string, options: { size?: number; indent?: number; bold?: boolean; grey?: boolean } = {}) {
    const size = options.size ?? 8.5;
    const indent = options.indent ?? 0;
    for (const wrapped of wrapText(content, this.font, size, A4[0] - 2 * margin - indent)) {
      if (this.y - size < margin) this.newPage();
      this.y -= size * 1.3;
      drawTextLine(this.page, wrapped, this.font, { x: margin + indent, y: this.y, size, color: options.grey ? rgb(0.35, 0.35, 0.35) : rgb(0, 0, 0) });
    }
  }

  heading(content: string) {
    this.y -= 8;
    this.line(content, { size: 12 });
    this.y -= 2;
  }
}

export async function buildAuditPdf(data: AuditPdfData, locale: AuditPdfLocale): Promise<PDFDocument> {
  const t = text[locale];
  const pdf = await PDFDocument.create();
  pdf.setTitle(`${t.title}: ${data.envelope.name}`);
  pdf.setCreator('Envelope service');
  pdf.setLanguage(locale);
  const writer = new Writer(pdf, await embedSans(pdf));
  writer.line(`${t.title}: ${data.envelope.name}`, { size: 16 });
  writer.line(`${t.generated}: ${data.generatedAt}`, { grey: true });

  writer.heading(t.envelope);
  const e = data.envelope;
  writer.line(`${t.id}: ${e.id}`);
  writer.line(`${t.name}: ${e.name}`);
  writer.line(`${t.status}: ${e.status}`);
  writer.line(`${t.created}: ${e.createdAt}`);
  if (e.sentAt) writer.line(`${t.sent}: ${e.sentAt}`);
  if (e.completedAt) writer.line(`${t.completed}: ${e.completedAt}`);
  if (e.voidedAt) writer.line(`${t.voided}: ${e.voidedAt}${e.voidReason ? ` (${t.voidReason}: ${e.voidReason})` : ''}`);

  writer.heading(t.documents);
  for (const document of data.documents) {
    writer.line(`${document.name} (${document.id}, ${document.pageCount} ${t.pages})`);
    writer.line(`${t.original}: ${document.originalSha256}`, { indent: 12 });
    writer.line(`${t.sealed}: ${document.sealedSha256 ?? t.notSealed}`, { indent: 12 });
  }

  writer.heading(t.recipients);
  for (const recipient of data.recipients) {
    const state = recipient.completedAt ? `${t.completed} ${recipient.completedAt}` : recipient.declinedAt ? `${t.declined} ${recipient.declinedAt}` : '';
    writer.line(`${recipient.roleName} (${recipient.type}, ${t.order} ${recipient.order}, ${recipient.id}) ${state}`);
    for (const agent of recipient.agents) writer.line([agent.name, agent.email, agent.phone].filter(Boolean).join(', '), { indent: 12 });
  }

  writer.heading(t.events);
  for (const event of data.events) {
    writer.line(`#${event.seq}  ${event.at}  ${event.type}  (${t.actor}: ${event.actor})`);
    if (event.ip || event.userAgent) writer.line(`${t.ip}: ${event.ip ?? '-'}  ${t.userAgent}: ${event.userAgent ?? '-'}`, { indent: 12, grey: true });
    const details = JSON.stringify(event.details);
    if (details !== '{}' && details !== undefined) writer.line(details, { indent: 12, grey: true, size: 7.5 });
    writer.line(event.hash, { indent: 12, grey: true, size: 7 });
  }

  writer.heading(t.biometrics);
  if (data.biometrics.length === 0) writer.line(t.none);
  for (const biometric of data.biometrics) writer.line(t.biometricLine(biometric));

  writer.heading(t.chain);
  writer.line(data.chain.valid ? t.chainValid(data.chain.length) : t.chainBroken(data.chain.brokenAtSeq ?? 0));
  writer.line(`${t.head}: ${data.chain.headHash ?? '-'}`);
  writer.line(t.howToVerify, { grey: true });

  const pages = pdf.getPages();
  for (const [index, page] of pages.entries()) {
    drawTextLine(page, `${t.page} ${index + 1} / ${pages.length}  ·  ${data.envelope.id}`, writer.font, { x: margin, y: 24, size: 7, color: rgb(0.4, 0.4, 0.4) });
  }
  return pdf;
}
