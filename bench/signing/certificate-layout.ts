/**
 * The certificate of completion's layout alone, in this thread (no seal): an envelope shaped like
 * bench:signing's (3 documents, 3 signers in turn, 37 audit events with their details), built
 * `--rounds` times per locale, the PDF saved each time (wall and process CPU time per certificate). For profiling the layout
 * (`node --cpu-prof bench/signing/certificate-layout.ts`) and comparing changes to it; not a
 * figure of the issue. Prints the mean ms per certificate and its SHA-256 per locale (equal
 * before and after a change that must not change the bytes).
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { type AuditPdfData, auditPdfLocales, buildAuditPdf } from '../../src/domain/pdf/audit-pdf-layout.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string' }, quick: { type: 'boolean' } } });
const rounds = Number(values.rounds ?? (values.quick ? 2 : 20));

const hash = (seed: string) => createHash('sha256').update(seed).digest('hex');
/** Ids fixed by a seed, so the bytes of two runs can be compared. */
let ids = 0;
const randomUUID = () => {
  const hex = hash(`id${(ids += 1)}`);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};
const at = (minute: number) => new Date(Date.UTC(2026, 10, 27, 10, minute, 7, 123)).toISOString();
/** The data of envelope `label`: names, ids and hashes differ per envelope, as in the service (a line is new text each time). */
function envelopeData(label: string): AuditPdfData {
  ids = Number(label) * 1000;
  const envelopeId = '5b0f8c2e-1d7a-4c1e-9a2b-3f4e5d6c7b8a';
  const documents = [2, 4, 6].map((pages, index) => ({
    id: randomUUID(),
    name: `Agreement ${label} part ${index + 1}`,
    pageCount: pages,
    originalSha256: hash(`o${index}${label}`),
    sealedSha256: hash(`s${index}${label}`),
  }));
  const signers = [0, 1, 2].map((index) => ({
    recipientId: randomUUID(),
    agentId: randomUUID(),
    person: { name: `Signer ${index + 1} of ${label}`, email: `signer${index + 1}-${label}@bench.example.com`, phone: null },
  }));
  const userAgent = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
  const events: AuditPdfData['events'] = [];
  const push = (
    type: string,
    actor: AuditPdfData['events'][number]['actor'],
    details: Record<string, unknown>,
    about: Partial<AuditPdfData['events'][number]['about']> = {},
    ip: string | null = null,
  ) =>
    events.push({
      seq: events.length + 1,
      at: at(events.length),
      type,
      actor,
      ip,
      userAgent: ip ? userAgent : null,
      details,
      hash: hash(`e${events.length}${label}`),
      about: { role: null, person: null, otherRole: null, document: null, fields: [], ...about },
    });
  const key = { kind: 'api_key' as const, name: 'bench key', email: null, phone: null };
  const service = { kind: 'system' as const, name: null, email: null, phone: null };
  push('envelope.created', key, { name: `Signing bench ${label}` }, {}, '127.0.0.1');
  for (const document of documents)
    push('document.uploaded', key, { documentId: document.id, name: document.name, sha256: document.originalSha256 }, { document: document.name }, '127.0.0.1');
  for (const [index, signer] of signers.entries())
    push(
      'recipient.added',
      key,
      { recipientId: signer.recipientId, roleName: `Signer ${index + 1}`, agentId: signer.agentId, peopleAsAt: { [signer.agentId]: signer.person } },
      { role: `Signer ${index + 1}`, person: signer.person.name },
      '127.0.0.1',
    );
  push('fields.added', key, { count: 6 }, {}, '127.0.0.1');
  push('envelope.sent', key, {}, {}, '127.0.0.1');
  for (const [index, signer] of signers.entries()) {
    const role = `Signer ${index + 1}`;
    const person = `${signer.person.name} (${signer.person.email})`;
    const actor = { kind: 'agent' as const, ...signer.person };
    push('invitation.queued', service, { recipientId: signer.recipientId, agentId: signer.agentId, channel: 'email', peopleAsAt: { [signer.agentId]: signer.person } }, { role, person });
    push('invitation.sent', service, { recipientId: signer.recipientId, agentId: signer.agentId, channel: 'email', peopleAsAt: { [signer.agentId]: signer.person } }, { role, person });
    push('signing.viewed', actor, { recipientId: signer.recipientId, agentId: signer.agentId, peopleAsAt: { [signer.agentId]: signer.person } }, { role, person }, '127.0.0.1');
    for (const field of [`sig${index + 1}`, `name${index + 1}`])
      push(
        'field.submitted',
        actor,
        { recipientId: signer.recipientId, fields: [{ fieldId: randomUUID(), identifier: field }], peopleAsAt: { [signer.agentId]: signer.person } },
        { role, fields: [field] },
        '127.0.0.1',
      );
    push(
      'recipient.completed',
      actor,
      { recipientId: signer.recipientId, agentId: signer.agentId, consent: 'I agree to use electronic signatures and records.', peopleAsAt: { [signer.agentId]: signer.person } },
      { role, person },
      '127.0.0.1',
    );
    push('final_copy.queued', service, { recipientId: signer.recipientId }, { role });
  }
  push('envelope.finalized', service, {});
  for (const document of documents) push('document.sealed', service, { documentId: document.id, sha256: document.sealedSha256 }, { document: document.name });
  while (events.length < 37) push('webhook.delivered', service, { url: 'https://hooks.example.com/envelope', status: 200 });

  const data: AuditPdfData = {
    generatedAt: at(40),
    current: false,
    envelope: {
      id: envelopeId,
      name: `Signing bench ${label}`,
      status: 'finalized',
      cause: null,
      createdAt: at(0),
      sentAt: at(8),
      completedAt: at(30),
      voidedAt: null,
      expiredAt: null,
      voidReason: null,
      sender: 'Signing bench',
    },
    documents,
    recipients: signers.map((signer, index) => ({
      id: signer.recipientId,
      roleName: `Signer ${index + 1}`,
      type: 'signer',
      order: index,
      completedAt: at(20 + index),
      declinedAt: null,
      people: [
        {
          ...signer.person,
          authentication: { method: 'link', channel: 'email', at: at(10 + index), by: null },
          sentAt: at(10 + index),
          viewedAt: at(11 + index),
          consentedAt: at(20 + index),
          consent: 'I agree to use electronic signatures and records.',
          signedAt: at(20 + index),
          approvedAt: null,
          approvalComment: null,
          madeQuorum: false,
          declinedAt: null,
          declineReason: null,
          delegatedAt: null,
          delegatedTo: null,
          ip: '127.0.0.1',
          userAgent,
          signatures: [{ fieldIdentifier: `sig${index + 1}`, kind: 'typed', image: null, text: signer.person.name, font: 'cursive' }],
          values: [{ fieldIdentifier: `name${index + 1}`, label: 'Full name', text: { 'en-US': signer.person.name, 'tr-TR': signer.person.name } }],
        },
      ],
    })),
    events,
    biometrics: [],
    chain: { valid: true, length: events.length, headHash: events.at(-1)!.hash, brokenAtSeq: null },
  };
  return data;
}

for (const locale of auditPdfLocales) {
  // One untimed build: fonts parsed, code compiled.
  let bytes = await (await buildAuditPdf(envelopeData('99999'), locale)).save({ useObjectStreams: false });
  const envelopes = Array.from({ length: rounds }, (_, round) => envelopeData(String(round + 1).padStart(5, '0')));
  const started = performance.now();
  const cpu = process.cpuUsage();
  for (const data of envelopes) bytes = await (await buildAuditPdf(data, locale)).save({ useObjectStreams: false });
  const ms = (performance.now() - started) / rounds;
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000 / rounds;
  console.log(
    `${locale}: ${ms.toFixed(1)} ms wall, ${cpuMs.toFixed(1)} ms CPU per certificate (${rounds} rounds), ${bytes.length} bytes, sha256 ${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}`,
  );
}
