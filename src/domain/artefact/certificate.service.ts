/**
 * The certificate of completion (docs/artefacts.md): what it says about an envelope (gathered
 * here from the database, every actor named), and the fixed copy produced once when the envelope
 * closes.
 *
 * Fixed at closing: the artefact job (`artefact.seal` after sealing a finalized envelope's
 * documents; `artefact.certificate` for a voided or expired one) renders and seals the certificate
 * in `closingCertificateLocale`, stores it content-addressed in the blob store and records its
 * SHA-256 in `envelope.certificates` by a guarded update (`where certificates -> locale is null`).
 * Another locale is fixed the same way on its first download (or the evidence package's), from
 * the same facts: the chain up to the recorded head and the recorded generation time. Every
 * download then answers those bytes. An envelope closed before this existed gets its certificate
 * on its first download through the same step; concurrent first downloads may each render one,
 * but only one is recorded and every one of them answers the recorded file (the other stays in
 * the blob store unreferenced until the orphan sweep removes it).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { type ChainLink, checkAuditChain } from '../audit/audit.service.ts';
import type { EnvelopeCertificates } from '../envelope/envelope.entity.ts';
import { isClosedEnvelopeStatus } from '../envelope/envelope.entity.ts';
import { EnvelopeAuditNotFoundError } from '../envelope/envelope.errors.ts';
import { displayText } from '../field/field-display.ts';
import { resolveFields, type VisibleWhen } from '../field/field-rules.js';
import { summariseBiometricValue } from '../field/field-values.ts';
import { DELIVERY_FAILURES } from '../outbox/delivery-failures.ts';
import { type OutboxHandler, PermanentOutboxError } from '../outbox/outbox-worker.ts';
import {
  type AuditPdfData,
  type AuditPdfLocale,
  auditPdfLocales,
  type CertificateActor,
  type CertificatePerson,
  type CertificateSignature,
  type CertificateValue,
} from '../pdf/audit-pdf-layout.ts';
import { peopleOf } from '../recipient/agent-people.ts';
import { type ArtefactDependencies, sealEnvelopeArtefacts } from './artefact.service.ts';
import { sealMaterialOf } from './seal-certificate.ts';
import { type SealedFileAccess, signerSignaturesForCertificate } from './signer-certificates.ts';

/** An attachment value as the certificate lists it: each file's name and SHA-256, in the value's order. */
function attachmentListing(value: Record<string, unknown>): string {
  const files = Array.isArray(value.files) ? (value.files as { name?: unknown; sha256?: unknown }[]) : [];
  return files.map((file) => `${String(file.name ?? '')} (SHA-256 ${String(file.sha256 ?? '')})`).join('; ');
}

export type CertificateRecord = NonNullable<EnvelopeCertificates['en-US']>;

const iso = (value: Date | string | null | undefined): string | null => (value === null || value === undefined ? null : new Date(value).toISOString());

type EnvelopeRow = {
  id: string;
  team_id: string;
  team_name: string;
  name: string;
  status: string;
  created_at: Date;
  sent_at: Date | null;
  completed_at: Date | null;
  voided_at: Date | null;
  expired_at: Date | null;
  void_reason: string | null;
  certificates: EnvelopeCertificates | null;
};

type Person = { name: string | null; email: string | null; phone: string | null };
type AgentRow = { id: string; recipient_id: string; info: Person | null; snapshot: Person[] | null; revoked_at: Date | null };
type EventRow = ChainLink & { details: Record<string, unknown> };

export async function readEnvelopeForCertificate(em: EntityManager, envelopeId: string): Promise<EnvelopeRow | undefined> {
  const [row] = await em.fork().execute<EnvelopeRow[]>(
    `select e.id, e.team_id, coalesce(nullif(t.settings ->> 'displayName', ''), t.name) as team_name, e.name, e.status, e.created_at, e.sent_at, e.completed_at, e.voided_at, e.expired_at, e.void_reason, e.certificates
       from envelope e join team t on t.id = e.team_id where e.id = ?`,
    [envelopeId],
  );
  return row;
}

/**
 * Every event of the envelope's chain, as `audit verify` hashes them (timestamps as `toISOString()`
 * text); with `first`, only the chain's first `first` events (what a fixed certificate included).
 */
export async function readChain(em: EntityManager, envelopeId: string, first?: number): Promise<EventRow[]> {
  return em.execute<EventRow[]>(
    `select stream_id as "streamId", envelope_id as "envelopeId", team_id as "teamId", seq, type,
            to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at,
            actor_type as "actorType", actor_id as "actorId", ip, user_agent as "userAgent", details, prev_hash as "prevHash", hash
       from audit_event where stream_id = ? order by seq${first === undefined ? '' : ' limit ?'}`,
    first === undefined ? [envelopeId] : [envelopeId, first],
  );
}

/** Everything the certificate says, read in a few statements; `current` marks an on-demand variant. */
export async function certificateData(
  em: EntityManager,
  auditKey: Buffer,
  envelope: EnvelopeRow,
  options: {
    generatedAt: Date;
    current: boolean;
    /** Only the chain's first this many events: another locale of a certificate already fixed says what that one says. */
    chainLength?: number;
    /** The sealed files, to check signers' own signatures in (signer-certificates.ts); without it they are `unchecked`. */
    files?: SealedFileAccess;
  },
): Promise<AuditPdfData> {
  // The caller's entity manager itself, not a fork: inside fixCertificate's transaction a fork would ask
  // the pool for a second connection, which the embedded database (one connection) never has.
  const db = em;
  const [documents, recipients, agents, fields, events] = await Promise.all([
    db.execute<{ id: string; name: string; page_count: number; content_sha256: string; sealed_sha256: string | null }[]>(
      `select id, name, page_count, content_sha256, sealed_sha256 from document where envelope_id = ? order by "order", id`,
      [envelope.id],
    ),
    db.execute<
      { id: string; identifier: string; role_name: string; type: string; order: number; quorum: number; completed_at: Date | null; declined_at: Date | null; removed_at: Date | null }[]
    >(`select id, identifier, role_name, type, "order", quorum, completed_at, declined_at, removed_at from recipient where envelope_id = ? order by "order", created_at, id`, [envelope.id]),
    db.execute<AgentRow[]>(
      `select a.id, a.recipient_id, a.info, a.snapshot, a.revoked_at from agent a join recipient r on r.id = a.recipient_id where r.envelope_id = ? order by a.position, a.created_at, a.id`,
      [envelope.id],
    ),
    db.execute<
      {
        id: string;
        identifier: string;
        label: string | null;
        type: string;
        value: Record<string, unknown> | null;
        config: Record<string, unknown> | null;
        visible_when: VisibleWhen | null;
        recipient_id: string | null;
      }[]
    >(`select id, identifier, label, type, value, config, visible_when, recipient_id from field where envelope_id = ? order by identifier, id`, [envelope.id]),
    readChain(em, envelope.id, options.chainLength),
  ]);
  if (events.length === 0) throw new EnvelopeAuditNotFoundError(envelope.id);
  // Signers' own signatures at a trust service (issue 35): none for most envelopes, one query then.
  const trustSignatures = await signerSignaturesForCertificate(db, { id: envelope.id, teamId: envelope.team_id }, { documents, ...(options.files ? { files: options.files } : {}) });
  const keyIds = [...new Set(events.filter((event) => event.actorType === 'api_key' && event.actorId).map((event) => event.actorId!))];
  const keys =
    keyIds.length === 0
      ? []
      : await db.execute<{ id: string; name: string }[]>(
          `select id::text as id, coalesce(label, prefix) as name from api_key where team_id = ? and id::text in (${keyIds.map(() => '?').join(', ')})`,
          [envelope.team_id, ...keyIds],
        );
  const keyNames = new Map(keys.map((key) => [key.id, key.name]));

  const agentsById = new Map(agents.map((agent) => [agent.id, agent]));
  const personOf = (agentId: unknown, personIndex?: unknown): Person | null => {
    const agent = typeof agentId === 'string' ? agentsById.get(agentId) : undefined;
    if (!agent) return null;
    const people = peopleOf(agent);
    return people[typeof personIndex === 'number' ? personIndex : 0] ?? people[0] ?? null;
  };
  /**
   * The person an event names, as the event recorded them when it was written
   * (`details.peopleAsAt`, since issue 31): an invitation sent to a mistyped address says that
   * address even after a resend corrected it. Events written before then name the person as the
   * agent stands now.
   */
  const personAt = (event: EventRow, agentId: unknown): Person | null => {
    const recorded = event.details?.peopleAsAt as Record<string, Person> | undefined;
    if (typeof agentId === 'string' && recorded && typeof recorded === 'object' && recorded[agentId]) return recorded[agentId]!;
    return personOf(agentId, event.details?.personIndex);
  };
  const personLabel = (person: Person | null): string | null => {
    if (!person) return null;
    const contact = person.email ?? person.phone;
    return person.name ? `${person.name}${contact ? ` (${contact})` : ''}` : (contact ?? null);
  };
  const actorOf = (event: EventRow): CertificateActor => {
    if (event.actorType === 'api_key') return { kind: 'api_key', name: keyNames.get(event.actorId ?? '') ?? null, email: null, phone: null };
    if (event.actorType === 'agent') {
      const person = personAt(event, event.actorId);
      return { kind: 'agent', name: person?.name ?? null, email: person?.email ?? null, phone: person?.phone ?? null };
    }
    return { kind: 'system', name: null, email: null, phone: null };
  };
  const roleOf = new Map(recipients.map((recipient) => [recipient.id, recipient.role_name || recipient.identifier]));
  const documentOf = new Map(documents.map((document) => [document.id, document.name]));
  const fieldOf = new Map(fields.map((field) => [field.id, field.identifier]));
  const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

  const certificateEvents: AuditPdfData['events'] = events.map((event) => {
    const d = event.details ?? {};
    const delegatedTo = event.type === 'recipient.delegated' && d.to && typeof d.to === 'object' ? personLabel(d.to as Person) : null;
    const submitted = Array.isArray(d.fields) ? (d.fields as { identifier?: string; fieldId?: string }[]).map((field) => field.identifier ?? fieldOf.get(field.fieldId ?? '') ?? '?') : [];
    const single = str(d.identifier) && event.type.startsWith('field.') ? [str(d.identifier)!] : str(d.fieldId) ? [fieldOf.get(str(d.fieldId)!) ?? str(d.fieldId)!] : [];
    return {
      seq: event.seq,
      at: event.at as string,
      type: event.type,
      actor: actorOf(event),
      ip: event.ip ?? null,
      userAgent: event.userAgent ?? null,
      details: d,
      hash: event.hash,
      about: {
        role: roleOf.get(str(d.recipientId) ?? '') ?? str(d.roleName) ?? str(d.identifier),
        person: delegatedTo ?? personLabel(personAt(event, d.agentId)),
        otherRole: str(d.hostFor) ? (roleOf.get(str(d.hostFor)!) ?? null) : null,
        document: documentOf.get(str(d.documentId) ?? '') ?? str(d.name),
        fields: submitted.length > 0 ? submitted : single,
      },
    };
  });

  // Per person: what the trail says they did, found by agent (and person, for a group's members).
  const byAgent = (agentId: string, personIndex: number) => (event: EventRow) => {
    const d = event.details ?? {};
    const index = typeof d.personIndex === 'number' ? d.personIndex : null;
    return (event.actorType === 'agent' && event.actorId === agentId && (index === null || index === personIndex)) || (d.agentId === agentId && (index === null || index === personIndex));
  };
  const fieldsById = new Map(fields.map((field) => [field.id, field]));
  // A field its conditions hide was not drawn in the sealed PDF, and is not listed here either.
  const rules = resolveFields(fields.map((field) => ({ identifier: field.identifier, type: field.type, config: field.config ?? {}, value: field.value, visibleWhen: field.visible_when })));
  const recipientsOut: AuditPdfData['recipients'] = recipients
    .filter((recipient) => recipient.removed_at === null)
    .map((recipient) => ({
      id: recipient.id,
      roleName: recipient.role_name || recipient.identifier,
      type: recipient.type,
      order: recipient.order,
      // An approver role: its quorum and every approval on the trail (who made the quorum is on the person).
      ...(recipient.type === 'approver'
        ? { approval: { quorum: recipient.quorum, approvals: events.filter((event) => event.type === 'recipient.approved' && event.details.recipientId === recipient.id).length } }
        : {}),
      completedAt: iso(recipient.completed_at),
      declinedAt: iso(recipient.declined_at),
      people: agents
        .filter((agent) => agent.recipient_id === recipient.id)
        .flatMap((agent) =>
          peopleOf(agent).map((person, personIndex): CertificatePerson => {
            const mine = events.filter(byAgent(agent.id, personIndex));
            const first = (type: string) => mine.find((event) => event.type === type);
            const last = (type: string) => mine.findLast((event) => event.type === type);
            const sent = first('invitation.sent');
            // The link the person acted through: the one sent, or (before its delivery was recorded) the one queued.
            const invited = sent ?? first('invitation.queued');
            const verified = last('otp.verified');
            const otpChannel = mine.findLast((event) => event.type === 'otp.sent' || event.type === 'otp.requested')?.details.channel;
            const embedded = events.find((event) => event.type === 'signing_url.created' && event.details.agentId === agent.id);
            const hosted = recipient.type === 'in_person_signer' ? events.find((event) => event.type === 'signing.hosted' && event.details.recipientId === recipient.id) : undefined;
            const completed = last('recipient.completed');
            const approved = recipient.type === 'approver' ? mine.find((event) => event.type === 'recipient.approved' && event.details.recipientId === recipient.id) : undefined;
            const declined = last('recipient.declined');
            const delegated = events.find((event) => event.type === 'recipient.delegated' && event.details.fromAgentId === agent.id);
            const acting = completed ?? declined ?? delegated ?? mine.findLast((event) => event.ip !== null);
            const authentication: CertificatePerson['authentication'] = hosted
              ? { method: 'in_person', channel: null, at: hosted.at as string, by: personLabel(personAt(hosted, hosted.actorId)) }
              : verified
                ? { method: 'otp', channel: str(otpChannel) ?? 'sms', at: verified.at as string, by: null }
                : embedded
                  ? { method: 'embedded', channel: null, at: embedded.at as string, by: keyNames.get(embedded.actorId ?? '') ?? null }
                  : invited && acting
                    ? { method: 'link', channel: str(invited.details.channel) ?? 'email', at: invited.at as string, by: null }
                    : { method: 'none', channel: null, at: null, by: null };
            const submittedIds = new Set(
              mine.filter((event) => event.type === 'field.submitted').flatMap((event) => ((event.details.fields as { fieldId: string }[] | undefined) ?? []).map((field) => field.fieldId)),
            );
            const signatures: CertificateSignature[] = [...submittedIds]
              .map((id) => fieldsById.get(id))
              .filter(
                (field): field is NonNullable<typeof field> =>
                  field !== undefined && field.value !== null && (field.type === 'simple_signature' || field.type === 'biometric_signature' || field.type === 'initials'),
              )
              .map((field) => {
                const value = field.value!;
                if (field.type === 'biometric_signature') return { fieldIdentifier: field.identifier, kind: 'biometric', image: str(value.image), text: null, font: null };
                if (value.kind === 'typed')
                  return { fieldIdentifier: field.identifier, kind: 'typed', image: null, text: str(value.text), font: value.font === 'cursive' ? 'cursive' : 'serif' };
                return { fieldIdentifier: field.identifier, kind: 'drawn', image: str(value.image), text: null, font: null };
              });
            // The values the role gave, under the person who completed it (the service's own, filled at completion, included).
            const values: CertificateValue[] = completed
              ? fields
                  .filter((field) => field.recipient_id === recipient.id && field.value !== null && rules.get(field.identifier)?.visible !== false)
                  .flatMap((field) => {
                    const text = Object.fromEntries(
                      auditPdfLocales.flatMap((locale) => {
                        // Each attachment by name and hash: the hash matches the file in the ZIP and the evidence package.
                        if (field.type === 'attachment') return [[locale, attachmentListing(field.value!)]];
                        const shown = displayText(field.type, field.value!, field.config ?? {}, locale);
                        return shown === undefined ? [] : [[locale, shown]];
                      }),
                    );
                    return Object.keys(text).length === 0 ? [] : [{ fieldIdentifier: field.identifier, label: field.label, text }];
                  })
              : [];
            return {
              name: person.name ?? null,
              email: person.email ?? null,
              phone: person.phone ?? null,
              authentication,
              sentAt: (sent?.at as string) ?? null,
              viewedAt: ((first('signing.viewed') ?? first('signing_url.opened'))?.at as string) ?? null,
              consentedAt: completed?.details.consent ? (completed.at as string) : null,
              consent: str(completed?.details.consent),
              // An approver signs nothing: its completion is the approval that made the quorum.
              signedAt: recipient.type === 'approver' ? null : ((completed?.at as string) ?? null),
              approvedAt: (approved?.at as string) ?? null,
              approvalComment: str(approved?.details.comment),
              madeQuorum: recipient.type === 'approver' && completed !== undefined && completed.details.madeQuorum === agent.id,
              declinedAt: (declined?.at as string) ?? null,
              declineReason: str(declined?.details.reason),
              delegatedAt: (delegated?.at as string) ?? null,
              delegatedTo: delegated?.details.to ? personLabel(delegated.details.to as Person) : null,
              ip: acting?.ip ?? null,
              userAgent: acting?.userAgent ?? null,
              signatures,
              values,
              trustSignature: trustSignatures.get(`${agent.id}:${personIndex}`) ?? null,
            };
          }),
        ),
    }));

  const biometrics: AuditPdfData['biometrics'] = fields
    .filter((field) => field.type === 'biometric_signature' && field.value !== null && Array.isArray(field.value.strokes))
    .map((field) => {
      const summary = summariseBiometricValue(field.value!);
      const pressures = (field.value!.strokes as { p: number }[][]).flat().map((point) => point.p);
      const submitter = events.findLast(
        (event) => event.type === 'field.submitted' && Array.isArray(event.details.fields) && (event.details.fields as { fieldId: string }[]).some((entry) => entry.fieldId === field.id),
      );
      return {
        fieldIdentifier: field.identifier,
        person: submitter ? personLabel(personAt(submitter, submitter.actorId)) : null,
        strokes: summary.strokeCount,
        points: summary.pointCount,
        durationMs: summary.durationMs,
        pressureMin: pressures.length > 0 ? Math.min(...pressures) : 0,
        pressureMax: pressures.length > 0 ? Math.max(...pressures) : 0,
        strokesSha256: summary.strokesSha256,
      };
    });

  const chain = checkAuditChain(auditKey, events);
  const voided = events.findLast((event) => event.type === 'envelope.voided');
  return {
    generatedAt: options.generatedAt.toISOString(),
    current: options.current,
    envelope: {
      id: envelope.id,
      name: envelope.name,
      status: envelope.status,
      cause: envelope.status === 'expired' ? 'expiry' : voided?.details.cause === 'decline' ? 'decline' : envelope.status === 'voided' ? 'void' : null,
      createdAt: iso(envelope.created_at)!,
      sentAt: iso(envelope.sent_at),
      completedAt: iso(envelope.completed_at),
      voidedAt: iso(envelope.voided_at),
      expiredAt: iso(envelope.expired_at),
      voidReason: envelope.void_reason,
      sender: envelope.team_name,
    },
    documents: documents.map((document) => ({
      id: document.id,
      name: document.name,
      pageCount: document.page_count,
      originalSha256: document.content_sha256,
      sealedSha256: document.sealed_sha256,
    })),
    recipients: recipientsOut,
    events: certificateEvents,
    biometrics,
    chain: chain.valid
      ? { valid: true, length: chain.length, headHash: chain.headHash, brokenAtSeq: null }
      : { valid: false, length: events.length, headHash: events.at(-1)!.hash, brokenAtSeq: chain.brokenAtSeq },
  };
}

export type CertificateDependencies = ArtefactDependencies;

/** Renders and seals a certificate into `outputPath` (a PDF worker). */
export async function renderCertificate(
  dependencies: Pick<CertificateDependencies, 'pdfWorkers' | 'seal' | 'publicUrl' | 'pdfQueuedSince'>,
  render: {
    data: AuditPdfData;
    locale: AuditPdfLocale;
    outputPath: string;
    /** The envelope's team: its place in the PDF workers' fair queue. */
    team: string;
    /** When the seal is made, if not when the data was gathered (a locale rendered after closing from the closing's facts). */
    sealedAt?: Date;
  },
): Promise<void> {
  const { data, locale, outputPath, team } = render;
  await dependencies.pdfWorkers.auditPdf(
    {
      data,
      locale,
      outputPath,
      seal: {
        material: sealMaterialOf(dependencies.seal),
        info: {
          reason: `${data.current ? 'Current audit log (not the certificate of completion)' : 'Certificate of completion'} sealed by the envelope service: envelope ${data.envelope.id}`,
          name: 'Envelope service',
          location: dependencies.publicUrl,
          signingTime: render.sealedAt ?? new Date(data.generatedAt),
          tsaUrl: dependencies.seal.tsaUrl,
        },
      },
    },
    { team, signDigest: dependencies.seal.signer.signDigest, queuedSince: dependencies.pdfQueuedSince },
  );
}

async function inTemporaryDirectory<T>(work: (directory: string) => Promise<T>): Promise<T> {
  const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'certificate-'));
  try {
    return await work(directory);
  } finally {
    await fs.promises.rm(directory, { recursive: true, force: true });
  }
}

/**
 * The envelope's fixed certificate in `locale`: the recorded one, else produced now (the
 * documents of a finalized envelope sealed first, so their sealed hashes are in it), stored and
 * recorded unless another run recorded one first; answers the record that holds.
 */
export async function fixCertificate(dependencies: CertificateDependencies, envelopeId: string, locale: AuditPdfLocale): Promise<CertificateRecord> {
  let envelope = await readEnvelopeForCertificate(dependencies.em, envelopeId);
  if (envelope === undefined) throw new PermanentOutboxError(DELIVERY_FAILURES.envelopeMissing, `envelope ${envelopeId} does not exist`);
  const recorded = envelope.certificates?.[locale];
  if (recorded !== undefined) return recorded;
  if (!isClosedEnvelopeStatus(envelope.status))
    throw new PermanentOutboxError(DELIVERY_FAILURES.envelopeNotFinalized(envelope.status), `envelope ${envelopeId} is ${envelope.status}, not closed`);
  if (envelope.status === 'finalized') {
    await sealEnvelopeArtefacts(dependencies, envelopeId);
    envelope = (await readEnvelopeForCertificate(dependencies.em, envelopeId))!;
  }
  // One run renders at a time per envelope, whatever the locale (concurrent first downloads wait
  // for it and answer what it recorded; a locale fixed while another is being fixed waits for it and
  // states its facts); the guarded update below would keep a second record out anyway.
  return dependencies.em.fork().transactional(async (tx) => {
    await tx.execute('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`certificate:${envelopeId}`], 'run');
    const [again] = await tx.execute<{ certificates: EnvelopeCertificates | null }[]>('select certificates from envelope where id = ?', [envelopeId]);
    const already = again?.certificates?.[locale];
    if (already !== undefined) return already;
    // Another locale fixed already (at closing, `closingCertificateLocale`): this one states the
    // same facts, the same events up to the same chain head and the same generation time, only in
    // its own language; its seal is made now. Otherwise this is the first, with the trail as it is.
    const reference = auditPdfLocales.map((other) => again?.certificates?.[other]).find((record) => record !== undefined);
    const now = dependencies.clock.now();
    const generatedAt = reference ? new Date(reference.generatedAt) : now;
    const data = await certificateData(tx, dependencies.auditKey, envelope, {
      generatedAt,
      current: false,
      files: dependencies,
      ...(reference ? { chainLength: reference.chainSeq } : {}),
    });
    if (reference && (data.chain.length !== reference.chainSeq || (data.chain.headHash ?? '') !== reference.chainHead)) {
      // The trail before the recorded head changed (a broken chain): never fix a certificate that disagrees with the other locale's.
      throw new Error(`envelope ${envelopeId}: the audit chain up to the fixed certificate's head no longer matches it`);
    }
    const stored = await inTemporaryDirectory(async (directory) => {
      const outputPath = path.join(directory, 'certificate.pdf');
      await renderCertificate(dependencies, { data, locale, outputPath, team: envelope.team_id, sealedAt: now });
      // Object first, row after: a row never names an object that is not stored.
      const staged = await dependencies.blobStore.stage(fs.createReadStream(outputPath));
      return staged.commit();
    });
    const record: CertificateRecord = { sha256: stored.sha256, byteSize: stored.byteSize, chainSeq: data.chain.length, chainHead: data.chain.headHash ?? '', generatedAt: data.generatedAt };
    const updated = await tx.execute<{ id: string }[]>(
      `update envelope set certificates = coalesce(certificates, '{}'::jsonb) || jsonb_build_object(?::text, ?::jsonb)
        where id = ? and (certificates is null or certificates -> ?::text is null) returning id`,
      [locale, JSON.stringify(record), envelopeId, locale],
    );
    if (updated.length === 1) return record;
    const [winner] = await tx.execute<{ certificates: EnvelopeCertificates }[]>('select certificates from envelope where id = ?', [envelopeId]);
    return winner!.certificates[locale]!;
  });
}

/**
 * The locale fixed when the envelope closes: the one every download defaults to (no `locale`, no
 * Turkish `Accept-Language`) and the signed-URL links name. The others are fixed on their first
 * download (or the evidence package's), from the same facts (`fixCertificate`): rendering every
 * locale at every closing doubled the PDF work of the signing path for files few ever ask for.
 */
export const closingCertificateLocale: AuditPdfLocale = 'en-US';

/** Fixes the certificate at closing (the artefact jobs): in `closingCertificateLocale`; other locales on demand. */
export async function fixCertificates(dependencies: CertificateDependencies, envelopeId: string): Promise<void> {
  await fixCertificate(dependencies, envelopeId, closingCertificateLocale);
}

/** The `artefact.certificate` handler: a voided or expired envelope's certificates (finalized ones get theirs in `artefact.seal`). */
export function artefactCertificateHandler(dependencies: Omit<CertificateDependencies, 'em'>): OutboxHandler<'artefact.certificate'> {
  return async (message, context) => {
    const envelopeId = message.payload.envelopeId;
    if (typeof envelopeId !== 'string') throw new PermanentOutboxError(DELIVERY_FAILURES.messageIncomplete, 'the message names no envelopeId');
    await fixCertificates({ ...dependencies, em: context.em }, envelopeId);
    context.logger.info({ envelopeId }, 'fixed the certificate of completion');
    return undefined;
  };
}
