/**
 * The certificate of completion (the audit-log PDF; docs/artefacts.md, "The certificate of
 * completion"): the envelope, each document with the SHA-256 of its original and of its sealed
 * file, each recipient and person (how they were authenticated, their signatures as drawn or
 * typed, IP address, user agent, when they were sent, viewed, consented, signed, declined or
 * delegated), every audit event as a sentence naming its actor, the biometric summaries, the chain
 * head with how to verify it offline, and the raw details in an appendix; en-US or tr-TR. Laid out
 * here, in a PDF worker thread, and sealed like the documents.
 *
 * Typesetting rules: every line is wrapped to the text area (a word longer than a line is broken
 * by characters), a heading is kept on the page of what follows it, an item (one event, one
 * person) is kept on one page when it fits on one, and every page carries its number and the
 * envelope id in the footer.
 */
import { PDFDocument, type PDFImage, type PDFPage, type RGB, rgb } from 'pdf-lib';
import type { CertificateDescription } from './certificate-description.ts';
import { drawTextLine, embedSans, embedScript, type TextFamily, wrapText } from './render.ts';

export type AuditPdfLocale = 'en-US' | 'tr-TR';
export const auditPdfLocales: readonly AuditPdfLocale[] = ['en-US', 'tr-TR'];

/** Who did something, as a reader knows them. */
export type CertificateActor = { kind: 'api_key' | 'agent' | 'system'; name: string | null; email: string | null; phone: string | null };

export type CertificateSignature = { fieldIdentifier: string; kind: 'drawn' | 'typed' | 'biometric'; image: string | null; text: string | null; font: 'cursive' | 'serif' | null };

/** A value the person's role gave (issue 32's types read as text), written in each locale of the certificate. */
export type CertificateValue = { fieldIdentifier: string; label: string | null; text: Record<string, string> };

/**
 * A signer's own signature at a trust service (issue 35): the level asked, the service, the
 * certificate as its QC statements describe it, and whether it validates (artefact/signer-certificates.ts):
 * `valid` when every sealed document carrying a signature by this certificate verifies (at least
 * one does) and the certificate was within its validity when the signer signed; `unchecked` without
 * sealed documents; `reason` says why when not valid.
 */
export type CertificateTrustSignature = {
  level: 'advanced' | 'qualified';
  trustServiceId: string;
  trustServiceName: string | null;
  signedAt: string | null;
  certificate: CertificateDescription | null;
  validation: {
    status: 'valid' | 'invalid' | 'unchecked';
    withinValidity: boolean | null;
    /** The sealed documents carrying a signature by this certificate, and whether each verifies. */
    documents: { name: string; valid: boolean }[];
    reason: 'no-certificate' | 'no-sealed-document' | 'not-in-sealed-documents' | 'signature-mismatch' | 'outside-validity' | null;
  };
};

export type CertificatePerson = {
  name: string | null;
  email: string | null;
  phone: string | null;
  /** How the person was authenticated: a link sent by mail or phone, a code by SMS/WhatsApp, in person (hosted by), embedded (by the sender's key). */
  authentication: { method: 'link' | 'otp' | 'in_person' | 'embedded' | 'none'; channel: string | null; at: string | null; by: string | null };
  sentAt: string | null;
  viewedAt: string | null;
  consentedAt: string | null;
  consent: string | null;
  signedAt: string | null;
  /** An approver's approval (issue 33), its comment, and whether it was the one that made the quorum. */
  approvedAt: string | null;
  approvalComment: string | null;
  madeQuorum: boolean;
  declinedAt: string | null;
  declineReason: string | null;
  delegatedAt: string | null;
  delegatedTo: string | null;
  ip: string | null;
  userAgent: string | null;
  signatures: CertificateSignature[];
  values: CertificateValue[];
  /** The person's own advanced or qualified signature at a trust service; null for a simple signature. */
  trustSignature?: CertificateTrustSignature | null;
};

export type CertificateEvent = {
  seq: number;
  at: string;
  type: string;
  actor: CertificateActor;
  ip: string | null;
  userAgent: string | null;
  details: Record<string, unknown>;
  hash: string;
  /** What the details name, by name: the role, the person, the document, the fields. */
  about: { role: string | null; person: string | null; otherRole: string | null; document: string | null; fields: string[] };
};

export type AuditPdfData = {
  generatedAt: string;
  /** An on-demand variant (`?current=true`): marked on every page as not the fixed certificate. */
  current: boolean;
  envelope: {
    id: string;
    name: string;
    status: string;
    cause: 'void' | 'decline' | 'expiry' | null;
    createdAt: string;
    sentAt: string | null;
    completedAt: string | null;
    voidedAt: string | null;
    expiredAt: string | null;
    voidReason: string | null;
    sender: string | null;
  };
  documents: { id: string; name: string; pageCount: number; originalSha256: string; sealedSha256: string | null }[];
  recipients: {
    id: string;
    roleName: string;
    type: string;
    order: number;
    approval?: { quorum: number; approvals: number };
    completedAt: string | null;
    declinedAt: string | null;
    people: CertificatePerson[];
  }[];
  events: CertificateEvent[];
  biometrics: { fieldIdentifier: string; person: string | null; strokes: number; points: number; durationMs: number; pressureMin: number; pressureMax: number; strokesSha256: string }[];
  chain: { valid: boolean; length: number; headHash: string | null; brokenAtSeq: number | null };
};

type Texts = typeof en;

const when = (iso: string | null): string => (iso === null ? '' : `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`);
const quoted = (value: string | null | undefined, locale: AuditPdfLocale): string => (locale === 'tr-TR' ? `“${value ?? ''}”` : `“${value ?? ''}”`);

const fieldList = (fields: string[]) => (fields.length === 0 ? 'a field' : `the ${fields.length === 1 ? 'field' : 'fields'} ${fields.join(', ')}`);

const en = {
  title: 'Certificate of completion',
  fixed: 'Fixed when the envelope closed: every download of this certificate is this same file.',
  current: 'CURRENT VARIANT, generated on request: this is not the fixed certificate of completion.',
  envelope: 'Envelope',
  id: 'Id',
  name: 'Name',
  status: 'Status',
  sender: 'Sent by',
  created: 'Created',
  sent: 'Sent',
  completed: 'Completed',
  voided: 'Voided',
  expired: 'Expired',
  reason: 'Reason',
  statuses: { draft: 'draft', sent: 'out for signature', finalized: 'completed and sealed', voided: 'voided', expired: 'expired' } as Record<string, string>,
  declinedBy: 'voided because a signer declined',
  documents: 'Documents',
  pages: (count: number) => `${count} ${count === 1 ? 'page' : 'pages'}`,
  original: 'Original SHA-256',
  sealed: 'Sealed SHA-256',
  notSealed: 'not sealed (the envelope did not complete)',
  recipients: 'Recipients and people',
  roleLine: (role: string, type: string, order: number) => `${role}: ${type}, signing order ${order}`,
  types: { signer: 'signer', host: 'host of an in-person signing', in_person_signer: 'signer in person', delegator: 'may delegate', viewer: 'viewer', approver: 'approver' } as Record<
    string,
    string
  >,
  quorumLine: (quorum: number, approvals: number) => `Quorum: ${quorum} ${quorum === 1 ? 'approval' : 'approvals'} needed, ${approvals} given`,
  approvalComment: 'Approval comment',
  madeQuorum: 'This approval made the quorum',
  nobody: 'No person was named for this role.',
  email: 'Email',
  phone: 'Phone',
  authentication: 'Authentication',
  auth: {
    link: (channel: string) => `signing link sent by ${channel}`,
    otp: (channel: string, at: string) => `one-time code by ${channel}, verified at ${at}`,
    in_person: (by: string) => `in person, hosted by ${by}`,
    embedded: (by: string) => `embedded signing, link created by ${by}`,
    none: 'not authenticated (the person did not act)',
  },
  times: { sentAt: 'Sent', viewedAt: 'Viewed', consentedAt: 'Consented', signedAt: 'Signed', approvedAt: 'Approved', declinedAt: 'Declined', delegatedAt: 'Delegated' },
  consentText: 'Consent',
  declineReason: 'Reason given',
  delegatedTo: 'Delegated to',
  ip: 'IP address',
  userAgent: 'User agent',
  trust: {
    heading: (level: string) => `Own ${level} electronic signature at a trust service`,
    levels: { advanced: 'advanced', qualified: 'qualified' } as Record<string, string>,
    service: 'Trust service',
    subject: 'Certificate subject',
    issuer: 'Certificate issuer',
    serial: 'Certificate serial number',
    validity: (from: string, to: string) => `Certificate valid from ${from} to ${to}`,
    certificateLevel: 'Level by the certificate’s QC statements',
    certificateLevels: {
      qualified: 'qualified (qualified certificate, key in a qualified signature creation device)',
      advancedQc: 'advanced (qualified certificate, key not declared in a qualified device)',
      advanced: 'advanced (not a qualified certificate)',
    },
    noCertificate: 'No readable certificate was recorded for this signature.',
    validates: 'Validates',
    status: {
      valid: (documents: string[]) =>
        `yes: the signature verifies in the sealed ${documents.length === 1 ? 'document' : 'documents'} ${documents.join(', ')} and the certificate was valid when the signer signed`,
      unchecked: 'not checked: there is no sealed document to check it in',
      'no-certificate': 'no: no readable certificate',
      'not-in-sealed-documents': 'no: no sealed document carries a signature by this certificate',
      'signature-mismatch': (documents: string[]) => `no: the signature does not match the bytes it covers in ${documents.join(', ')}`,
      'outside-validity': 'no: the certificate was not within its validity period when the signer signed',
    },
    chainNote: 'The certificate’s chain to a trusted list and its revocation are what POST /verify of the sealed document reports (TRUST_ANCHORS).',
  },
  signatures: 'Signature',
  value: 'Value',
  typed: 'typed',
  drawn: 'drawn',
  biometricKind: 'drawn with a pen (biometric)',
  events: 'Events (UTC)',
  biometrics: 'Biometric signatures',
  biometricLine: (b: AuditPdfData['biometrics'][number]) =>
    `${b.fieldIdentifier}${b.person ? ` (${b.person})` : ''}: ${b.strokes} strokes, ${b.points} points, ${b.durationMs} ms, pressure ${b.pressureMin}–${b.pressureMax}, strokes SHA-256 ${b.strokesSha256}`,
  none: 'none',
  chain: 'Audit chain',
  chainValid: (length: number) => `The chain of ${length} events verifies.`,
  chainBroken: (seq: number) => `The chain is broken at event ${seq}.`,
  chainCovered: (length: number) => `This certificate includes events 1 to ${length}; later events (downloads, among others) extend the same chain.`,
  head: 'Chain head',
  howToVerify: [
    'This file carries the service’s PAdES seal: any PDF signature validator (Adobe Reader, pdfsig) or npm run cli -- verify FILE.pdf shows whether one byte of it changed since it was sealed.',
    'Each event’s hash is an HMAC-SHA256, keyed by the service’s audit key, over the previous event’s hash and the event’s canonical content. The evidence package (GET /api/v1/key/envelopes/{id}/evidence) carries the whole chain as JSON lines: npm run cli -- verify-package FILE.zip checks offline that each event links to the one before it and ends at the chain head printed here, and, given the audit key (--audit-key), recomputes every HMAC.',
    'The service also verifies the chain on request: GET /api/v1/key/envelopes/{id}/audit/verify, the GraphQL query verifyAuditChain, or npm run cli -- audit verify --envelope ID.',
  ],
  appendix: 'Appendix: raw event details',
  generated: 'Generated',
  page: (index: number, count: number) => `Page ${index} of ${count}`,
  footer: 'Certificate of completion, envelope',
  currentFooter: 'current variant, not the fixed certificate',
  service: 'the service',
  apiKey: (label: string) => `the API key “${label}”`,
  someone: 'someone',
  channels: { email: 'email', sms: 'SMS', whatsapp: 'WhatsApp', none: 'no channel' } as Record<string, string>,
  notices: {
    completed: 'the final copy',
    voided: 'the notice that the envelope was voided',
    declined: 'the notice of the decline',
    expired: 'the notice that the envelope expired',
    handed_over: 'the notice of the hand-over',
    void: 'the notice that the envelope was voided',
    decline: 'the notice of the decline',
    expiry: 'the notice that the envelope expired',
    delivery_failed: 'the notice of a failed delivery',
  } as Record<string, string>,
  otpReasons: { wrong_code: 'a wrong code', expired: 'an expired code', already_used: 'a code already used', attempts_exhausted: 'no attempts left' } as Record<string, string>,
  formats: {
    pdf: 'a document',
    zip: 'every document as a ZIP',
    'audit-pdf': 'the certificate of completion',
    certificate: 'the certificate of completion',
    evidence: 'the evidence package',
    attachment: 'a signer’s attachment',
  } as Record<string, string>,
  sentence(event: CertificateEvent, actor: string): string {
    const d = event.details;
    const a = event.about;
    const role = quoted(a.role, 'en-US');
    const person = a.person ?? this.someone;
    const channel = this.channels[String(d.channel ?? 'none')] ?? String(d.channel);
    switch (event.type) {
      case 'envelope.created':
        return `${actor} created the envelope.`;
      case 'envelope.updated':
        return `${actor} changed the envelope’s settings.`;
      case 'envelope.sent':
        return `${actor} sent the envelope for signing${d.expiresAt ? `; it expires at ${when(String(d.expiresAt))}` : ''}.`;
      case 'envelope.finalized':
        return 'Every role was completed: the envelope was completed.';
      case 'envelope.voided':
        return d.cause === 'decline'
          ? `The envelope was voided because the role ${role} was declined: ${quoted(String(d.reason ?? ''), 'en-US')}.`
          : `${actor} voided the envelope: ${quoted(String(d.reason ?? ''), 'en-US')}.`;
      case 'envelope.expired':
        return 'The envelope expired before every role was completed.';
      case 'envelope.corrected':
        return `${actor} corrected the sent envelope (revision ${Number(d.revision)}).`;
      case 'document.added':
        return `${actor} added the document ${quoted(a.document, 'en-US')}.`;
      case 'document.updated':
        return `${actor} changed the document ${quoted(a.document, 'en-US')}.`;
      case 'document.removed':
        return `${actor} removed the document ${quoted(a.document, 'en-US')}.`;
      case 'recipient.added':
        return `${actor} added the role ${role}.`;
      case 'recipient.updated':
        return `${actor} changed the role ${role}.`;
      case 'recipient.removed':
        return `${actor} removed the role ${role}.`;
      case 'recipient.activated':
        return a.otherRole ? `It became the turn of the role ${role}, to host ${quoted(a.otherRole, 'en-US')} in person.` : `It became the turn of the role ${role}.`;
      case 'recipient.deactivated':
        return `After a correction it was no longer the turn of the role ${role}; its links stopped working.`;
      case 'recipient.approved':
        return `${actor} approved for the role ${role} (${Number(d.approvals)} of ${Number(d.quorum)})${d.comment ? `: ${quoted(String(d.comment), 'en-US')}` : ''}.`;
      case 'recipient.completed':
        return d.madeQuorum
          ? `${actor} made the quorum: the role ${role} was approved.`
          : `${actor} completed the role ${role}${d.consent ? ` and consented: ${quoted(String(d.consent), 'en-US')}` : ''}.`;
      case 'recipient.declined':
        return `${actor} declined the role ${role}: ${quoted(String(d.reason ?? ''), 'en-US')}.`;
      case 'recipient.delegated':
        return `${actor} delegated the role ${role} to ${a.person ?? this.someone}.`;
      case 'field.added':
        return `${actor} placed ${fieldList(a.fields)}.`;
      case 'field.updated':
        return `${actor} changed ${fieldList(a.fields)}.`;
      case 'field.removed':
        return `${actor} removed ${fieldList(a.fields)}.`;
      case 'field.submitted':
        return `${actor} filled in ${a.fields.join(', ') || 'fields'} for the role ${role}.`;
      case 'invitation.queued':
        return `The invitation of ${person} to the role ${role} was queued (${channel}).`;
      case 'invitation.sent':
        return `The invitation was sent to ${person} by ${channel}.`;
      case 'invitation.resent':
        return `${actor} sent the invitation of ${person} again; earlier links stopped working.`;
      case 'reminder.queued':
        return `A reminder to the role ${role} was queued.`;
      case 'reminder.sent':
        return `A reminder was sent to ${person} by ${channel}.`;
      case 'reminder.requested':
        return `${actor} asked to remind everyone whose turn it is.`;
      case 'notice.sent':
        return `${this.notices[String(d.kind)] ?? 'A notice'} was sent to ${a.person ?? (d.to ? String(d.to) : this.someone)} by ${channel}.`.replace(/^t/, 'T');
      case 'notification.failed':
        return `A message to ${person} could not be delivered (${channel}).`;
      case 'notification.capped':
        return `A message to ${person} was not sent: the daily limit of messages to the phone number was reached.`;
      case 'signing.viewed':
        return `${actor} opened the signing page.`;
      case 'signing.hosted':
        return `${actor} started signing in person for the role ${role}.`;
      case 'signing_url.created':
        return `${actor} created an embedded signing link for ${person}.`;
      case 'signing_url.opened':
        return `${actor} opened the embedded signing link.`;
      case 'otp.requested':
        return `${actor} asked for a one-time code by ${channel}${d.phone ? ` to ${String(d.phone)}` : ''}.`;
      case 'otp.sent':
        return `A one-time code was sent to ${person} by ${channel}.`;
      case 'otp.verified':
        return `${actor} entered the right one-time code.`;
      case 'otp.failed':
        return `${actor} was refused a one-time code: ${this.otpReasons[String(d.reason)] ?? String(d.reason)}.`;
      case 'artefact.sealed':
        return `The service sealed the document ${quoted(a.document, 'en-US')}.`;
      case 'artefact.downloaded':
        return `${actor} downloaded ${this.formats[String(d.format)] ?? 'a file'}.`;
      default:
        return `${actor}: ${event.type}.`;
    }
  },
};

const tr: Texts = {
  title: 'Tamamlanma sertifikası',
  fixed: 'Zarf kapandığında sabitlendi: bu sertifikanın her indirmesi bu aynı dosyadır.',
  current: 'GÜNCEL SÜRÜM, istek üzerine üretildi: sabitlenmiş tamamlanma sertifikası değildir.',
  envelope: 'Zarf',
  id: 'Kimlik',
  name: 'Ad',
  status: 'Durum',
  sender: 'Gönderen',
  created: 'Oluşturulma',
  sent: 'Gönderilme',
  completed: 'Tamamlanma',
  voided: 'İptal',
  expired: 'Süre dolumu',
  reason: 'Gerekçe',
  statuses: { draft: 'taslak', sent: 'imzada', finalized: 'tamamlandı ve mühürlendi', voided: 'iptal edildi', expired: 'süresi doldu' },
  declinedBy: 'bir imzacı reddettiği için iptal edildi',
  documents: 'Belgeler',
  pages: (count: number) => `${count} sayfa`,
  original: 'Özgün SHA-256',
  sealed: 'Mühürlü SHA-256',
  notSealed: 'mühürlenmedi (zarf tamamlanmadı)',
  recipients: 'Alıcılar ve kişiler',
  roleLine: (role: string, type: string, order: number) => `${role}: ${type}, imza sırası ${order}`,
  types: { signer: 'imzacı', host: 'yüz yüze imzanın ev sahibi', in_person_signer: 'yüz yüze imzacı', delegator: 'devredebilir', viewer: 'görüntüleyen', approver: 'onaylayan' } as Record<
    string,
    string
  >,
  quorumLine: (quorum: number, approvals: number) => `Nisap: ${quorum} onay gerekli, ${approvals} onay verildi`,
  approvalComment: 'Onay notu',
  madeQuorum: 'Nisabı tamamlayan onay',
  nobody: 'Bu rol için kimse belirtilmedi.',
  email: 'E-posta',
  phone: 'Telefon',
  authentication: 'Kimlik doğrulama',
  auth: {
    link: (channel: string) => `${channel} ile gönderilen imza bağlantısı`,
    otp: (channel: string, at: string) => `${channel} ile tek kullanımlık kod, doğrulama ${at}`,
    in_person: (by: string) => `yüz yüze, ev sahibi: ${by}`,
    embedded: (by: string) => `gömülü imza, bağlantıyı oluşturan: ${by}`,
    none: 'doğrulanmadı (kişi işlem yapmadı)',
  },
  times: { sentAt: 'Gönderilme', viewedAt: 'Görüntüleme', consentedAt: 'Onay', signedAt: 'İmza', approvedAt: 'Onaylama', declinedAt: 'Ret', delegatedAt: 'Devir' },
  consentText: 'Onay metni',
  declineReason: 'Ret gerekçesi',
  delegatedTo: 'Devredilen kişi',
  ip: 'IP adresi',
  userAgent: 'Tarayıcı',
  trust: {
    heading: (level: string) => `Güven hizmeti sağlayıcısında kendi ${level} elektronik imzası`,
    levels: { advanced: 'gelişmiş', qualified: 'nitelikli' } as Record<string, string>,
    service: 'Güven hizmeti',
    subject: 'Sertifika sahibi',
    issuer: 'Sertifikayı veren',
    serial: 'Sertifika seri numarası',
    validity: (from: string, to: string) => `Sertifika geçerliliği: ${from} – ${to}`,
    certificateLevel: 'Sertifikanın QC beyanlarına göre düzey',
    certificateLevels: {
      qualified: 'nitelikli (nitelikli sertifika, anahtar nitelikli imza oluşturma cihazında)',
      advancedQc: 'gelişmiş (nitelikli sertifika, anahtarın nitelikli cihazda olduğu beyan edilmemiş)',
      advanced: 'gelişmiş (nitelikli sertifika değil)',
    },
    noCertificate: 'Bu imza için okunabilir bir sertifika kaydedilmedi.',
    validates: 'Doğrulama',
    status: {
      valid: (documents: string[]) => `geçerli: imza mühürlü ${documents.length === 1 ? 'belgede' : 'belgelerde'} (${documents.join(', ')}) doğrulanıyor ve sertifika imza anında geçerliydi`,
      unchecked: 'denetlenmedi: denetlenecek mühürlü belge yok',
      'no-certificate': 'geçersiz: okunabilir sertifika yok',
      'not-in-sealed-documents': 'geçersiz: hiçbir mühürlü belge bu sertifikayla atılmış bir imza taşımıyor',
      'signature-mismatch': (documents: string[]) => `geçersiz: imza, kapsadığı baytlarla eşleşmiyor (${documents.join(', ')})`,
      'outside-validity': 'geçersiz: sertifika, imzacı imzaladığında geçerlilik süresi içinde değildi',
    },
    chainNote: 'Sertifikanın güvenilir listeye zinciri ve iptal durumu, mühürlü belgenin POST /verify raporunda yer alır (TRUST_ANCHORS).',
  },
  signatures: 'İmza',
  value: 'Değer',
  typed: 'yazılarak',
  drawn: 'çizilerek',
  biometricKind: 'kalemle çizilerek (biyometrik)',
  events: 'Olaylar (UTC)',
  biometrics: 'Biyometrik imzalar',
  biometricLine: (b: AuditPdfData['biometrics'][number]) =>
    `${b.fieldIdentifier}${b.person ? ` (${b.person})` : ''}: ${b.strokes} çizgi, ${b.points} nokta, ${b.durationMs} ms, basınç ${b.pressureMin}–${b.pressureMax}, çizgilerin SHA-256 özeti ${b.strokesSha256}`,
  none: 'yok',
  chain: 'Denetim zinciri',
  chainValid: (length: number) => `${length} olaylık zincir doğrulanıyor.`,
  chainBroken: (seq: number) => `Zincir ${seq}. olayda kırık.`,
  chainCovered: (length: number) => `Bu sertifika 1 ile ${length} arasındaki olayları içerir; sonraki olaylar (indirmeler gibi) aynı zinciri uzatır.`,
  head: 'Zincirin başı',
  howToVerify: [
    'Bu dosya hizmetin PAdES mührünü taşır: herhangi bir PDF imza doğrulayıcısı (Adobe Reader, pdfsig) ya da npm run cli -- verify FILE.pdf, mühürlendikten sonra tek bir baytının değişip değişmediğini gösterir.',
    'Her olayın özeti, hizmetin denetim anahtarıyla, önceki olayın özeti ve olayın kanonik içeriği üzerinden hesaplanan HMAC-SHA256 değeridir. Kanıt paketi (GET /api/v1/key/envelopes/{id}/evidence) zincirin tamamını JSON satırları olarak taşır: npm run cli -- verify-package FILE.zip, her olayın bir öncekine bağlandığını ve burada yazan zincir başında bittiğini çevrim dışı denetler; denetim anahtarı verilirse (--audit-key) her HMAC değerini yeniden hesaplar.',
    'Hizmet zinciri istek üzerine de doğrular: GET /api/v1/key/envelopes/{id}/audit/verify, GraphQL verifyAuditChain sorgusu ya da npm run cli -- audit verify --envelope ID.',
  ],
  appendix: 'Ek: olayların ham ayrıntıları',
  generated: 'Oluşturulma zamanı',
  page: (index: number, count: number) => `Sayfa ${index} / ${count}`,
  footer: 'Tamamlanma sertifikası, zarf',
  currentFooter: 'güncel sürüm, sabitlenmiş sertifika değil',
  service: 'hizmet',
  apiKey: (label: string) => `“${label}” API anahtarı`,
  someone: 'bir kişi',
  channels: { email: 'e-posta', sms: 'SMS', whatsapp: 'WhatsApp', none: 'kanalsız' },
  notices: {
    completed: 'Son kopya',
    voided: 'İptal bildirimi',
    declined: 'Ret bildirimi',
    expired: 'Süre dolumu bildirimi',
    handed_over: 'Devir bildirimi',
    void: 'İptal bildirimi',
    decline: 'Ret bildirimi',
    expiry: 'Süre dolumu bildirimi',
    delivery_failed: 'Teslim edilemeyen ileti bildirimi',
  },
  otpReasons: { wrong_code: 'yanlış kod', expired: 'süresi dolmuş kod', already_used: 'daha önce kullanılmış kod', attempts_exhausted: 'deneme hakkı kalmadı' },
  formats: {
    pdf: 'bir belgeyi',
    zip: 'tüm belgeleri ZIP olarak',
    'audit-pdf': 'tamamlanma sertifikasını',
    certificate: 'tamamlanma sertifikasını',
    evidence: 'kanıt paketini',
    attachment: 'bir imzacı ekini',
  },
  sentence(event: CertificateEvent, actor: string): string {
    const d = event.details;
    const a = event.about;
    const role = `${quoted(a.role, 'tr-TR')} rolünü`;
    const person = a.person ?? this.someone;
    const channel = this.channels[String(d.channel ?? 'none')] ?? String(d.channel);
    switch (event.type) {
      case 'envelope.created':
        return `${actor} zarfı oluşturdu.`;
      case 'envelope.updated':
        return `${actor} zarfın ayarlarını değiştirdi.`;
      case 'envelope.sent':
        return `${actor} zarfı imzaya gönderdi${d.expiresAt ? `; son geçerlilik ${when(String(d.expiresAt))}` : ''}.`;
      case 'envelope.finalized':
        return 'Tüm roller tamamlandı: zarf tamamlandı.';
      case 'envelope.voided':
        return d.cause === 'decline'
          ? `${quoted(a.role, 'tr-TR')} rolü reddedildiği için zarf iptal edildi: ${quoted(String(d.reason ?? ''), 'tr-TR')}.`
          : `${actor} zarfı iptal etti: ${quoted(String(d.reason ?? ''), 'tr-TR')}.`;
      case 'envelope.expired':
        return 'Tüm roller tamamlanmadan zarfın süresi doldu.';
      case 'envelope.corrected':
        return `${actor} gönderilmiş zarfı düzeltti (revizyon ${Number(d.revision)}).`;
      case 'document.added':
        return `${actor} ${quoted(a.document, 'tr-TR')} belgesini ekledi.`;
      case 'document.updated':
        return `${actor} ${quoted(a.document, 'tr-TR')} belgesini değiştirdi.`;
      case 'document.removed':
        return `${actor} ${quoted(a.document, 'tr-TR')} belgesini kaldırdı.`;
      case 'recipient.added':
        return `${actor} ${role} ekledi.`;
      case 'recipient.updated':
        return `${actor} ${role} değiştirdi.`;
      case 'recipient.removed':
        return `${actor} ${role} kaldırdı.`;
      case 'recipient.activated':
        return a.otherRole
          ? `Sıra ${quoted(a.role, 'tr-TR')} rolüne geldi: ${quoted(a.otherRole, 'tr-TR')} için yüz yüze imzayı yönetecek.`
          : `Sıra ${quoted(a.role, 'tr-TR')} rolüne geldi.`;
      case 'recipient.deactivated':
        return `Bir düzeltmeden sonra sıra artık ${quoted(a.role, 'tr-TR')} rolünde değil; bağlantıları geçersiz oldu.`;
      case 'recipient.approved':
        return `${actor} ${role} için onay verdi (${Number(d.approvals)}/${Number(d.quorum)})${d.comment ? `: ${quoted(String(d.comment), 'tr-TR')}` : ''}.`;
      case 'recipient.completed':
        if (d.madeQuorum) return `${actor} nisabı tamamladı: ${role} onaylandı.`;
        return `${actor} ${role} tamamladı${d.consent ? ` ve onay verdi: ${quoted(String(d.consent), 'tr-TR')}` : ''}.`;
      case 'recipient.declined':
        return `${actor} ${role} reddetti: ${quoted(String(d.reason ?? ''), 'tr-TR')}.`;
      case 'recipient.delegated':
        return `${actor} ${role} ${a.person ?? this.someone} adlı kişiye devretti.`;
      case 'field.added':
        return `${actor} ${a.fields.length > 0 ? `şu alanları yerleştirdi: ${a.fields.join(', ')}` : 'bir alan yerleştirdi'}.`;
      case 'field.updated':
        return `${actor} ${a.fields.length > 0 ? `şu alanları değiştirdi: ${a.fields.join(', ')}` : 'bir alanı değiştirdi'}.`;
      case 'field.removed':
        return `${actor} ${a.fields.length > 0 ? `şu alanları kaldırdı: ${a.fields.join(', ')}` : 'bir alanı kaldırdı'}.`;
      case 'field.submitted':
        return `${actor}, ${quoted(a.role, 'tr-TR')} rolü için şu alanları doldurdu: ${a.fields.join(', ')}.`;
      case 'invitation.queued':
        return `${person} için ${quoted(a.role, 'tr-TR')} rolüne davet sıraya alındı (${channel}).`;
      case 'invitation.sent':
        return `Davet ${person} adlı kişiye ${channel} ile gönderildi.`;
      case 'invitation.resent':
        return `${actor}, ${person} için daveti yeniden gönderdi; önceki bağlantılar geçersiz oldu.`;
      case 'reminder.queued':
        return `${quoted(a.role, 'tr-TR')} rolüne hatırlatma sıraya alındı.`;
      case 'reminder.sent':
        return `Hatırlatma ${person} adlı kişiye ${channel} ile gönderildi.`;
      case 'reminder.requested':
        return `${actor}, sırası gelen herkese hatırlatma istedi.`;
      case 'notice.sent':
        return `${this.notices[String(d.kind)] ?? 'Bir bildirim'}, ${a.person ?? (d.to ? String(d.to) : this.someone)} adresine ${channel} ile gönderildi.`;
      case 'notification.failed':
        return `${person} için ileti teslim edilemedi (${channel}).`;
      case 'notification.capped':
        return `${person} için ileti gönderilmedi: telefon numarasının günlük ileti sınırına ulaşıldı.`;
      case 'signing.viewed':
        return `${actor} imza sayfasını açtı.`;
      case 'signing.hosted':
        return `${actor}, ${quoted(a.role, 'tr-TR')} rolü için yüz yüze imzayı başlattı.`;
      case 'signing_url.created':
        return `${actor}, ${person} için gömülü imza bağlantısı oluşturdu.`;
      case 'signing_url.opened':
        return `${actor} gömülü imza bağlantısını açtı.`;
      case 'otp.requested':
        return `${actor} ${channel} ile tek kullanımlık kod istedi${d.phone ? ` (${String(d.phone)})` : ''}.`;
      case 'otp.sent':
        return `Tek kullanımlık kod ${person} adlı kişiye ${channel} ile gönderildi.`;
      case 'otp.verified':
        return `${actor} doğru tek kullanımlık kodu girdi.`;
      case 'otp.failed':
        return `${actor} tek kullanımlık kodla giriş yapamadı: ${this.otpReasons[String(d.reason)] ?? String(d.reason)}.`;
      case 'artefact.sealed':
        return `Hizmet ${quoted(a.document, 'tr-TR')} belgesini mühürledi.`;
      case 'artefact.downloaded':
        return `${actor} ${this.formats[String(d.format)] ?? 'bir dosyayı'} indirdi.`;
      default:
        return `${actor}: ${event.type}.`;
    }
  },
};

const text = { 'en-US': en, 'tr-TR': tr };

/** The actor as a sentence names them: a person by name and address, a key by its label, the system as "the service". */
export function actorLabel(actor: CertificateActor, locale: AuditPdfLocale): string {
  const t = text[locale];
  if (actor.kind === 'system') return t.service;
  if (actor.kind === 'api_key') return t.apiKey(actor.name ?? '?');
  const contact = actor.email ?? actor.phone;
  return actor.name ? `${actor.name}${contact ? ` (${contact})` : ''}` : (contact ?? t.someone);
}

/** An event as one sentence, its first letter capitalised. */
export function eventSentence(event: CertificateEvent, locale: AuditPdfLocale): string {
  const sentence = text[locale].sentence(event, actorLabel(event.actor, locale));
  return sentence.charAt(0).toLocaleUpperCase(locale) + sentence.slice(1);
}

const A4: [number, number] = [595.28, 841.89];
/** The text area: every line of the body lies within these margins; the footer sits below it. */
export const CERTIFICATE_MARGIN = 48;
const FOOTER_Y = 26;
const grey = rgb(0.35, 0.35, 0.35);
const black = rgb(0, 0, 0);
const red = rgb(0.7, 0, 0);

type Item =
  | { kind: 'text'; lines: string[]; size: number; indent: number; color: RGB; family: TextFamily; after: number }
  | { kind: 'image'; image: PDFImage; width: number; height: number; indent: number; after: number }
  | { kind: 'script'; text: string; size: number; indent: number; family: TextFamily; after: number };

const lineHeight = (size: number) => size * 1.32;

function heightOf(item: Item): number {
  if (item.kind === 'text') return item.lines.length * lineHeight(item.size) + item.after;
  if (item.kind === 'image') return item.height + item.after;
  return lineHeight(item.size) + item.after;
}

/** Lays blocks down A4 pages: a block stays on one page when it fits on one, a heading stays with the block after it. */
class Writer {
  readonly pdf: PDFDocument;
  readonly sans: TextFamily;
  readonly script: TextFamily;
  readonly width = A4[0] - 2 * CERTIFICATE_MARGIN;
  page!: PDFPage;
  y = 0;
  private pendingHeadings: Item[] = [];

  constructor(pdf: PDFDocument, sans: TextFamily, script: TextFamily) {
    this.pdf = pdf;
    this.sans = sans;
    this.script = script;
    this.newPage();
  }

  newPage() {
    this.page = this.pdf.addPage(A4);
    this.y = A4[1] - CERTIFICATE_MARGIN;
  }

  text(content: string, options: { size?: number; indent?: number; color?: RGB; after?: number } = {}): Item {
    const size = options.size ?? 8.5;
    const indent = options.indent ?? 0;
    return { kind: 'text', lines: wrapText(content, this.sans, size, this.width - indent), size, indent, color: options.color ?? black, family: this.sans, after: options.after ?? 0 };
  }

  /** A heading: drawn with the next block, on that block's page. */
  heading(content: string, level: 1 | 2 = 1) {
    const size = level === 1 ? 13 : 10;
    this.pendingHeadings.push({ ...this.text(content, { size, color: level === 1 ? black : rgb(0.1, 0.1, 0.3) }), after: level === 1 ? 4 : 2 } as Item);
  }

  gap(points: number) {
    this.y -= points;
  }

  /** Lays out one block (an event, a person, a document), after any pending heading. */
  block(items: Item[], options: { before?: number } = {}) {
    const headings = this.pendingHeadings;
    this.pendingHeadings = [];
    const before = (options.before ?? 0) + (headings.length > 0 ? 10 : 0);
    const all = [...headings, ...items];
    const total = before + all.reduce((sum, item) => sum + heightOf(item), 0);
    const available = this.y - CERTIFICATE_MARGIN;
    const fullPage = A4[1] - 2 * CERTIFICATE_MARGIN;
    if (total > available && (total <= fullPage || headings.length > 0 || available < fullPage / 4)) {
      this.newPage();
    } else {
      this.y -= before;
    }
    // Headings and the first line of what follows must share a page even when the block is split.
    const firstLine = items[0] ? (items[0].kind === 'text' ? lineHeight(items[0].size) : heightOf(items[0])) : 0;
    if (headings.length > 0 && this.y - headings.reduce((sum, item) => sum + heightOf(item), 0) - firstLine < CERTIFICATE_MARGIN) this.newPage();
    for (const item of all) this.draw(item);
  }

  private ensure(height: number) {
    if (this.y - height < CERTIFICATE_MARGIN) this.newPage();
  }

  private draw(item: Item) {
    const x = CERTIFICATE_MARGIN + item.indent;
    if (item.kind === 'text') {
      for (const line of item.lines) {
        this.ensure(lineHeight(item.size));
        this.y -= lineHeight(item.size);
        if (line !== '') drawTextLine(this.page, line, item.family, { x, y: this.y + (lineHeight(item.size) - item.size) / 2, size: item.size, color: item.color });
      }
    } else if (item.kind === 'image') {
      this.ensure(item.height);
      this.y -= item.height;
      this.page.drawImage(item.image, { x, y: this.y, width: item.width, height: item.height });
    } else {
      this.ensure(lineHeight(item.size));
      this.y -= lineHeight(item.size);
      drawTextLine(this.page, item.text, item.family, { x, y: this.y + (lineHeight(item.size) - item.size) / 2, size: item.size, color: rgb(0, 0, 0.35) });
    }
    this.y -= item.after;
  }
}

async function signatureItems(writer: Writer, images: Map<string, Promise<PDFImage>>, signature: CertificateSignature, t: Texts): Promise<Item[]> {
  const label = writer.text(`${t.signatures} (${signature.fieldIdentifier}, ${signature.kind === 'typed' ? t.typed : signature.kind === 'biometric' ? t.biometricKind : t.drawn}):`, {
    indent: 12,
    color: grey,
  });
  if (signature.kind === 'typed') {
    const family = signature.font === 'cursive' ? writer.script : writer.sans;
    const fitted = wrapText(signature.text ?? '', family, 20, writer.width - 24)[0] ?? '';
    return [label, { kind: 'script', text: fitted, size: 20, indent: 24, family, after: 2 }];
  }
  if (signature.image === null) return [label];
  let embedded = images.get(signature.image);
  if (embedded === undefined) {
    embedded = writer.pdf.embedPng(Buffer.from(signature.image.slice(signature.image.indexOf(',') + 1), 'base64'));
    images.set(signature.image, embedded);
  }
  try {
    const image = await embedded;
    const scale = Math.min(160 / image.width, 48 / image.height);
    return [label, { kind: 'image', image, width: image.width * scale, height: image.height * scale, indent: 24, after: 4 }];
  } catch {
    return [label];
  }
}

/** A person's own signature at a trust service: the level, the service, the certificate and whether it validates. */
function trustSignatureItems(writer: Writer, signature: CertificateTrustSignature, t: Texts): Item[] {
  const items: Item[] = [writer.text(`${t.trust.heading(t.trust.levels[signature.level] ?? signature.level)}:`, { indent: 12, color: grey })];
  const line = (content: string) => items.push(writer.text(content, { indent: 24 }));
  line(`${t.trust.service}: ${signature.trustServiceName ? `${signature.trustServiceName} (${signature.trustServiceId})` : signature.trustServiceId}`);
  if (signature.signedAt) line(`${t.times.signedAt}: ${when(signature.signedAt)}`);
  const certificate = signature.certificate;
  if (certificate === null) {
    line(t.trust.noCertificate);
  } else {
    line(`${t.trust.subject}: ${certificate.subject}`);
    line(`${t.trust.issuer}: ${certificate.issuer}`);
    line(`${t.trust.serial}: ${certificate.serialNumber}`);
    line(t.trust.validity(when(certificate.notBefore), when(certificate.notAfter)));
    const level =
      certificate.level === 'qualified' ? t.trust.certificateLevels.qualified : certificate.qualifiedCertificate ? t.trust.certificateLevels.advancedQc : t.trust.certificateLevels.advanced;
    line(`${t.trust.certificateLevel}: ${level}`);
  }
  const validation = signature.validation;
  const documents = validation.documents.map((document) => document.name);
  const status =
    validation.status === 'valid'
      ? t.trust.status.valid(documents)
      : validation.status === 'unchecked'
        ? t.trust.status.unchecked
        : validation.reason === 'signature-mismatch'
          ? t.trust.status['signature-mismatch'](validation.documents.filter((document) => !document.valid).map((document) => document.name))
          : t.trust.status[validation.reason === 'outside-validity' || validation.reason === 'no-certificate' ? validation.reason : 'not-in-sealed-documents'];
  line(`${t.trust.validates}: ${status}`);
  items.push(writer.text(t.trust.chainNote, { indent: 24, color: grey, size: 7.5 }));
  return items;
}

export async function buildAuditPdf(data: AuditPdfData, locale: AuditPdfLocale): Promise<PDFDocument> {
  const t = text[locale];
  const pdf = await PDFDocument.create();
  pdf.setTitle(`${t.title}: ${data.envelope.name}`);
  pdf.setCreator('Envelope service');
  pdf.setProducer('Envelope service');
  pdf.setLanguage(locale);
  // A fixed file: its dates are the generation time, not the moment pdf-lib runs.
  pdf.setCreationDate(new Date(data.generatedAt));
  pdf.setModificationDate(new Date(data.generatedAt));
  const writer = new Writer(pdf, await embedSans(pdf), await embedScript(pdf));
  const w = writer;
  const e = data.envelope;

  w.block([
    w.text(`${t.title}: ${e.name}`, { size: 16, after: 2 }),
    w.text(`${t.generated}: ${when(data.generatedAt)}`, { color: grey }),
    data.current ? w.text(t.current, { color: red, size: 9.5 }) : w.text(t.fixed, { color: grey }),
  ]);

  w.heading(t.envelope);
  const status = t.statuses[e.status] ?? e.status;
  w.block([
    w.text(`${t.id}: ${e.id}`),
    w.text(`${t.name}: ${e.name}`),
    w.text(`${t.status}: ${e.cause === 'decline' ? t.declinedBy : status}`),
    ...(e.sender ? [w.text(`${t.sender}: ${e.sender}`)] : []),
    w.text(`${t.created}: ${when(e.createdAt)}`),
    ...(e.sentAt ? [w.text(`${t.sent}: ${when(e.sentAt)}`)] : []),
    ...(e.completedAt ? [w.text(`${t.completed}: ${when(e.completedAt)}`)] : []),
    ...(e.voidedAt ? [w.text(`${t.voided}: ${when(e.voidedAt)}${e.voidReason ? ` (${t.reason}: ${e.voidReason})` : ''}`)] : []),
    ...(e.expiredAt ? [w.text(`${t.expired}: ${when(e.expiredAt)}`)] : []),
  ]);

  w.heading(t.documents);
  for (const document of data.documents) {
    w.block(
      [
        w.text(`${document.name} (${t.pages(document.pageCount)})`, { size: 9.5 }),
        w.text(`${t.id}: ${document.id}`, { indent: 12, color: grey }),
        w.text(`${t.original}: ${document.originalSha256}`, { indent: 12 }),
        w.text(`${t.sealed}: ${document.sealedSha256 ?? t.notSealed}`, { indent: 12 }),
      ],
      { before: 4 },
    );
  }

  w.heading(t.recipients);
  const images = new Map<string, Promise<PDFImage>>();
  for (const recipient of data.recipients) {
    w.heading(t.roleLine(recipient.roleName, t.types[recipient.type] ?? recipient.type, recipient.order), 2);
    if (recipient.approval) w.block([w.text(t.quorumLine(recipient.approval.quorum, recipient.approval.approvals), { indent: 6 })]);
    if (recipient.people.length === 0) w.block([w.text(t.nobody, { indent: 12, color: grey })]);
    for (const person of recipient.people) {
      const items: Item[] = [w.text(person.name ?? t.someone, { size: 9.5, indent: 6 })];
      if (person.email) items.push(w.text(`${t.email}: ${person.email}`, { indent: 12 }));
      if (person.phone) items.push(w.text(`${t.phone}: ${person.phone}`, { indent: 12 }));
      const auth = person.authentication;
      const channel = t.channels[auth.channel ?? 'none'] ?? auth.channel ?? '';
      const how =
        auth.method === 'otp'
          ? t.auth.otp(channel, when(auth.at))
          : auth.method === 'in_person'
            ? t.auth.in_person(auth.by ?? t.someone)
            : auth.method === 'embedded'
              ? t.auth.embedded(auth.by ?? t.someone)
              : auth.method === 'link'
                ? t.auth.link(channel)
                : t.auth.none;
      items.push(w.text(`${t.authentication}: ${how}`, { indent: 12 }));
      for (const key of ['sentAt', 'viewedAt', 'consentedAt', 'signedAt', 'approvedAt', 'declinedAt', 'delegatedAt'] as const) {
        if (person[key]) items.push(w.text(`${t.times[key]}: ${when(person[key])}`, { indent: 12 }));
      }
      if (person.consent) items.push(w.text(`${t.consentText}: ${quoted(person.consent, locale)}`, { indent: 12 }));
      if (person.approvalComment) items.push(w.text(`${t.approvalComment}: ${quoted(person.approvalComment, locale)}`, { indent: 12 }));
      if (person.madeQuorum) items.push(w.text(t.madeQuorum, { indent: 12 }));
      if (person.declineReason) items.push(w.text(`${t.declineReason}: ${quoted(person.declineReason, locale)}`, { indent: 12 }));
      if (person.delegatedTo) items.push(w.text(`${t.delegatedTo}: ${person.delegatedTo}`, { indent: 12 }));
      if (person.ip) items.push(w.text(`${t.ip}: ${person.ip}`, { indent: 12 }));
      if (person.userAgent) items.push(w.text(`${t.userAgent}: ${person.userAgent}`, { indent: 12, color: grey, size: 7.5 }));
      for (const signature of person.signatures) items.push(...(await signatureItems(w, images, signature, t)));
      if (person.trustSignature) items.push(...trustSignatureItems(w, person.trustSignature, t));
      for (const value of person.values) {
        const shown = value.text[locale] ?? Object.values(value.text)[0] ?? '';
        items.push(w.text(`${t.value} (${value.label ? `${value.label}, ` : ''}${value.fieldIdentifier}): ${shown}`, { indent: 12 }));
      }
      w.block(items, { before: 4 });
    }
  }

  w.heading(t.events);
  for (const event of data.events) {
    const items: Item[] = [w.text(`${when(event.at)}   #${event.seq}`, { color: grey, size: 7.5 }), w.text(eventSentence(event, locale), { indent: 12 })];
    if (event.ip || event.userAgent) items.push(w.text([event.ip, event.userAgent].filter(Boolean).join('  ·  '), { indent: 12, color: grey, size: 7 }));
    w.block(items, { before: 3 });
  }

  w.heading(t.biometrics);
  if (data.biometrics.length === 0) w.block([w.text(t.none)]);
  for (const biometric of data.biometrics) w.block([w.text(t.biometricLine(biometric))], { before: 2 });

  w.heading(t.chain);
  w.block([
    w.text(data.chain.valid ? t.chainValid(data.chain.length) : t.chainBroken(data.chain.brokenAtSeq ?? 0)),
    w.text(t.chainCovered(data.chain.length)),
    w.text(`${t.head}: ${data.chain.headHash ?? '-'}`, { after: 4 }),
  ]);
  for (const paragraph of t.howToVerify) w.block([w.text(paragraph, { color: grey })], { before: 3 });

  w.heading(t.appendix);
  for (const event of data.events) {
    const details = JSON.stringify(event.details);
    w.block([w.text(`#${event.seq} ${event.type} ${event.hash}${details === '{}' ? '' : ` ${details}`}`, { size: 6.5, color: grey })], { before: 1.5 });
  }

  const pages = pdf.getPages();
  for (const [index, page] of pages.entries()) {
    const footer = `${t.footer} ${e.id}${data.current ? ` (${t.currentFooter})` : ''}  ·  ${t.page(index + 1, pages.length)}`;
    for (const [line, content] of wrapText(footer, writer.sans, 7, writer.width).entries()) {
      drawTextLine(page, content, writer.sans, { x: CERTIFICATE_MARGIN, y: FOOTER_Y - line * 9, size: 7, color: data.current ? red : rgb(0.4, 0.4, 0.4) });
    }
  }
  return pdf;
}
