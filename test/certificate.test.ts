/**
 * The certificate of completion (issue 23): typeset so nothing is cut (pdftotext -bbox), headings
 * kept with what follows, actors by name, tr-TR without English status or role words; fixed at
 * closing (byte-identical downloads, pdfsig-valid), the current variant marked as such; the
 * evidence package checked offline by verify-package, and one flipped byte in any part found and
 * named. The rendered pages of one envelope in both locales are kept under test-artefacts/.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ZipArchive } from 'archiver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readZip, verifyEvidencePackage } from '../src/domain/artefact/evidence-check.ts';
import { removeOrphanBlobs } from '../src/domain/document/orphan-blobs.ts';
import { createOutboxWorker } from '../src/domain/outbox/outbox-worker.ts';
import { OUTBOX_TOPICS } from '../src/domain/outbox/topics.ts';
import { createLogger } from '../src/shared/logger.ts';
import { mainJobHandlers } from '../src/workers.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { uploadDocument } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, TEST_AUDIT_KEY, type TestApp, testSealCertificate, testSealDataDir } from './helpers/harness.ts';
import { blackPngDataUrl, pdfsig, wordBoxes } from './helpers/pdf-tools.ts';
import { buildEnvelope, SESSION_QUERY, SUBMIT_MUTATION, signingClient, tokenFor } from './helpers/signing.ts';
import { workerDependencies } from './helpers/workers.ts';

let app: TestApp;
let team: SeededTeam;
let directory: string;
const artefactDirectory = path.join(import.meta.dirname, '..', 'test-artefacts', 'certificate');

beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'certificate-'));
});
afterAll(async () => {
  fs.rmSync(directory, { recursive: true, force: true });
  await app.close();
});

const A4 = { width: 595.28, height: 841.89 };
const MARGIN = 48;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
const longName = 'Ek protokol ' + 'KIRA-SOZLESMESI-EKI-'.repeat(6) + 'SON';
const people = {
  kiraci: { name: 'Şükrü Çağlayan Öztürkoğlu-Karadenizli Abdurrahmanoğulları', email: 'sukru.caglayan.ozturkoglu.karadenizli@ornek-gayrimenkul-danismanlik.com.tr' },
  evsahibi: { name: 'Gülşen İpekçioğlu Ünaldı', email: 'gulsen@ornek.com.tr' },
  kefil: { name: 'Ömer Faruk Işıklı', email: 'omer.isikli@ornek.com.tr' },
};
const strokes = [
  [
    { x: 1, y: 2, t: 0, p: 0.25 },
    { x: 5, y: 8, t: 40, p: 0.75 },
    { x: 9, y: 4, t: 70, p: 0.6 },
  ],
  [{ x: 9, y: 3, t: 90, p: 0.5 }],
];

/** The artefact jobs from the main worker's own map (workers.ts), kept to this test's team. */
function artefactWorker() {
  const production = mainJobHandlers(workerDependencies(app));
  return createOutboxWorker({
    em: app.orm.em,
    clock: app.dependencies.clock,
    logger: createLogger('silent'),
    payloadMatch: { teamId: team.teamId },
    handlers: new Map([OUTBOX_TOPICS.sealArtefacts, OUTBOX_TOPICS.fixCertificate].map((topic) => [topic, production.get(topic)!])),
  });
}

/** Three signers with long Turkish names, a document whose name ends in a long unbroken string, 60+ events. */
async function finalizedEnvelope() {
  const built = await buildEnvelope(app, team.apiKey, {
    name: 'Kira sözleşmesi: Şişli, İstanbul (güncel)',
    recipients: [
      { identifier: 'kiraci', order: 1, agents: [{ info: people.kiraci }], fields: [{ identifier: 'kiraci-imza', required: true }] },
      { identifier: 'ev-sahibi', order: 2, agents: [{ info: people.evsahibi }], fields: [{ identifier: 'ev-sahibi-imza', required: true }] },
      {
        identifier: 'kefil',
        order: 3,
        agents: [{ info: people.kefil }],
        fields: [
          { identifier: 'kefil-kalem', type: 'biometric_signature', required: true },
          { identifier: 'kefil-not', type: 'text', required: false },
        ],
      },
    ],
  });
  const extra = await uploadDocument(app, team.apiKey, built.envelopeId, { bytes: await makePdf({ pages: 1 }) }, { name: longName });
  expect(extra.status, JSON.stringify(extra.body)).toBe(200);
  expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);

  const sign = async (recipient: string, field: string, value: unknown, consent?: string) => {
    const client = signingClient(app, await tokenFor(app, built.envelopeId, built.recipients[recipient]!));
    expect((await client(SESSION_QUERY)).errors).toBeUndefined();
    // Several drafts before the final value: each submission is an event of its own.
    for (let round = 0; round < 13; round++) {
      const draft = await client(SUBMIT_MUTATION, { values: [{ fieldId: built.fields[field], value }] });
      expect(draft.errors, JSON.stringify(draft.errors)).toBeUndefined();
    }
    const done = await client(
      `mutation($values: [SigningValueInput!], $consent: String) { submitSigning(values: $values, complete: true, consent: $consent) { recipient { completedAt } } }`,
      {
        values: [{ fieldId: built.fields[field], value }],
        consent: consent ?? null,
      },
    );
    expect(done.errors, JSON.stringify(done.errors)).toBeUndefined();
  };
  await sign('kiraci', 'kiraci-imza', { kind: 'drawn', image: blackPngDataUrl(40, 12) }, 'Elektronik imza kullanmayı kabul ediyorum.');
  await sign('ev-sahibi', 'ev-sahibi-imza', { kind: 'typed', text: 'Gülşen İpekçioğlu', font: 'cursive' });
  await sign('kefil', 'kefil-kalem', { image: blackPngDataUrl(), strokes });
  const status = await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}`);
  expect(status.body.payload.envelope.status).toBe('finalized');
  return built;
}

async function fetchCertificate(envelopeId: string, query = '') {
  const response = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/audit/pdf${query}`, { headers: { 'x-service-api-key': team.apiKey } });
  return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) };
}

function save(bytes: Buffer, name: string): string {
  const file = path.join(directory, name);
  fs.writeFileSync(file, bytes);
  return file;
}

type Line = { page: number; y: number; height: number; text: string };

/** The lines of each page (words grouped by baseline), top to bottom. */
function linesOf(file: string): Line[][] {
  return wordBoxes(file).map((words, page) => {
    const lines: Line[] = [];
    for (const word of [...words].sort((a, b) => a.yMax - b.yMax || a.xMin - b.xMin)) {
      const line = lines.find((candidate) => Math.abs(candidate.y - word.yMax) < 1.5);
      if (line) {
        line.text += ` ${word.text}`;
        line.height = Math.max(line.height, word.yMax - word.yMin);
      } else lines.push({ page, y: word.yMax, height: word.yMax - word.yMin, text: word.text });
    }
    return lines;
  });
}

const text = (file: string) => execFileSync('pdftotext', ['-raw', file, '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');

const headings = {
  'en-US': ['Envelope', 'Documents', 'Recipients and people', 'Events (UTC)', 'Biometric signatures', 'Audit chain', 'Appendix: raw event details'],
  'tr-TR': ['Zarf', 'Belgeler', 'Alıcılar ve kişiler', 'Olaylar (UTC)', 'Biyometrik imzalar', 'Denetim zinciri', 'Ek: olayların ham ayrıntıları'],
};

describe('the certificate of completion', () => {
  let built: Awaited<ReturnType<typeof finalizedEnvelope>>;
  const files: Record<string, string> = {};

  beforeAll(async () => {
    built = await finalizedEnvelope();
    // The artefact job, as at closing: seals the documents, then fixes the certificate in en-US (tr-TR on its first download).
    await artefactWorker().drain();
    const [row] = await app.orm.em.fork().execute<{ certificates: any }[]>('select certificates from envelope where id = ?', [built.envelopeId]);
    expect(Object.keys(row!.certificates).sort()).toEqual(['en-US']);
  }, 240_000);

  it('is typeset inside the text area, headings never last on a page, every page numbered with the envelope id, actors by name (en-US and tr-TR)', async () => {
    const trail = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/audit`)).body.payload.events;
    expect(trail.length).toBeGreaterThanOrEqual(60);
    fs.rmSync(artefactDirectory, { recursive: true, force: true });
    fs.mkdirSync(artefactDirectory, { recursive: true });
    for (const locale of ['en-US', 'tr-TR'] as const) {
      const answer = await fetchCertificate(built.envelopeId, `?locale=${locale}`);
      expect(answer.status).toBe(200);
      const file = save(answer.bytes, `certificate-${locale}.pdf`);
      files[locale] = file;
      const pages = wordBoxes(file);
      expect(pages.length).toBeGreaterThan(2);
      for (const [index, words] of pages.entries()) {
        for (const word of words) {
          // Every word within the text area: the margins left and right, from the top margin down to the footer.
          expect(word.xMin, `${locale} page ${index + 1}: ${word.text}`).toBeGreaterThanOrEqual(MARGIN - 0.5);
          expect(word.xMax, `${locale} page ${index + 1}: ${word.text}`).toBeLessThanOrEqual(A4.width - MARGIN + 0.5);
          expect(word.yMin, `${locale} page ${index + 1}: ${word.text}`).toBeGreaterThanOrEqual(MARGIN - 2);
          expect(word.yMax, `${locale} page ${index + 1}: ${word.text}`).toBeLessThanOrEqual(A4.height - 12);
        }
      }
      const lines = linesOf(file);
      for (const [index, page] of lines.entries()) {
        // The footer: the page's number of the total and the envelope id.
        const footer = page.at(-1)!;
        expect(footer.text).toContain(built.envelopeId);
        expect(footer.text).toContain(locale === 'en-US' ? `Page ${index + 1} of ${lines.length}` : `Sayfa ${index + 1} / ${lines.length}`);
        // The last line of the body is never a heading (section or role).
        const body = page.slice(0, -1);
        const last = body.at(-1)!;
        const isHeading = headings[locale].includes(last.text) || (last.height > 10 && /^(kiraci|ev-sahibi|kefil):/.test(last.text));
        expect(isHeading, `${locale} page ${index + 1} ends with the heading "${last.text}"`).toBe(false);
      }
      const flat = text(file);
      fs.writeFileSync(path.join(artefactDirectory, `${locale}.txt`), flat);
      // The long unbroken name is all there, wrapped rather than cut.
      expect(flat.replace(/ /g, '')).toContain(longName.replace(/ /g, ''));
      // The events: sentences naming people, the key by its label, the service; no id as an actor.
      // (The footer of a page break inside the section carries the envelope id: not an actor.)
      const events = flat.slice(flat.indexOf(headings[locale][3]), flat.indexOf(headings[locale][4])).replaceAll(built.envelopeId, '');
      const id = UUID.exec(events);
      expect(id, id ? `an id in the events: …${events.slice(Math.max(0, id.index - 200), id.index + 60)}…` : '').toBeNull();
      expect(events).not.toMatch(/\b(api_key|agent|system) /);
      for (const person of Object.values(people)) expect(events).toContain(person.name);
      expect(events).toContain(locale === 'en-US' ? 'The API key “' : 'API anahtarı');
      expect(events).toContain(locale === 'en-US' ? 'The service sealed the document' : 'Hizmet “');
      // Per person: how they were authenticated, their signature, IP and user agent, the times.
      const recipients = flat.slice(flat.indexOf(headings[locale][2]), flat.indexOf(headings[locale][3]));
      for (const person of Object.values(people)) expect(recipients).toContain(person.name);
      expect(recipients).toContain('Gülşen İpekçioğlu');
      expect(recipients).toContain('signing-test');
      expect(recipients).toContain(locale === 'en-US' ? 'Authentication: signing link sent by email' : 'Kimlik doğrulama: e-posta ile gönderilen imza bağlantısı');
      expect(recipients).toContain(locale === 'en-US' ? 'Consent: “Elektronik imza kullanmayı kabul ediyorum.”' : 'Onay metni: “Elektronik imza kullanmayı kabul ediyorum.”');
      expect(recipients).toContain(locale === 'en-US' ? 'drawn with a pen (biometric)' : 'kalemle çizilerek (biyometrik)');
      if (locale === 'tr-TR') {
        // No English status or role word before the raw appendix (which quotes the stored data as it is).
        const translated = flat.slice(0, flat.indexOf(headings['tr-TR'][6]));
        expect(translated).not.toMatch(
          /\b(finalized|voided|expired|draft|sent|signed|signer|signers|viewer|host|delegator|declined|delegated|completed|consented|status|role|recipient|page|the service)\b/i,
        );
      }
      // The pages as a person sees them, kept as test artefacts.
      execFileSync('pdftoppm', ['-r', '60', '-png', file, path.join(artefactDirectory, locale)]);
    }
    expect(fs.readdirSync(artefactDirectory).filter((name) => name.endsWith('.png')).length).toBeGreaterThan(4);
  }, 240_000);

  it('is fixed: downloads with other downloads in between are byte-identical, pdfsig-valid, and the recorded file; the current variant is marked', async () => {
    const first = await fetchCertificate(built.envelopeId);
    expect(first.status).toBe(200);
    expect((await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } })).status).toBe(200);
    const current = await fetchCertificate(built.envelopeId, '?current=true');
    expect(current.status).toBe(200);
    // The orphan sweep keeps the recorded certificates (it removes only what no row names).
    await removeOrphanBlobs({ em: app.orm.em, blobStore: app.dependencies.blobStore, now: app.dependencies.clock.now(), graceMs: 0 });
    const second = await fetchCertificate(built.envelopeId);
    expect(second.status).toBe(200);
    expect(second.bytes.equals(first.bytes)).toBe(true);
    const [row] = await app.orm.em.fork().execute<{ certificates: any }[]>('select certificates from envelope where id = ?', [built.envelopeId]);
    expect(createHash('sha256').update(first.bytes).digest('hex')).toBe(row!.certificates['en-US'].sha256);
    const report = pdfsig(save(first.bytes, 'fixed.pdf'));
    expect(report).toContain('Signature is Valid.');
    expect(report).toContain('Total document signed');
    expect(text(save(first.bytes, 'fixed.pdf'))).toContain('Fixed when the envelope closed');
    // The downloads are in the chain, not in the fixed file; the current variant shows them and says what it is.
    const currentText = text(save(current.bytes, 'current.pdf'));
    expect(currentText).toContain('CURRENT VARIANT, generated on request: this is not the fixed certificate of completion.');
    expect(currentText).toContain('downloaded every document as a ZIP');
    expect(text(save(first.bytes, 'fixed.pdf'))).not.toContain('downloaded every document as a ZIP');
    expect(pdfsig(save(current.bytes, 'current.pdf'))).toContain('Signature is Valid.');
    // GraphQL: the same fixed bytes through a signed URL; current: true the marked variant.
    const graphql = graphqlClient(app, team.apiKey);
    const link = await graphql('query($id: ID!) { auditLogPdfUrl(envelopeId: $id) { url } current: auditLogPdfUrl(envelopeId: $id, current: true) { url } }', { id: built.envelopeId });
    expect(link.errors).toBeUndefined();
    const viaLink = Buffer.from(await (await fetch(`${app.url}${new URL(link.data.auditLogPdfUrl.url).pathname}`)).arrayBuffer());
    expect(viaLink.equals(first.bytes)).toBe(true);
    const currentViaLink = Buffer.from(await (await fetch(`${app.url}${new URL(link.data.current.url).pathname}`)).arrayBuffer());
    expect(text(save(currentViaLink, 'current-link.pdf'))).toContain('CURRENT VARIANT');
    const invalid = await fetchCertificate(built.envelopeId, '?current=maybe');
    expect(invalid.status).toBe(400);
  }, 240_000);

  it('in the locale not fixed at closing is produced on its first download with the same facts as the closing one (not the downloads since), then kept', async () => {
    const other = await finalizedEnvelope();
    await artefactWorker().drain();
    const english = await fetchCertificate(other.envelopeId, '?locale=en-US');
    expect(english.status).toBe(200);
    // Downloads after closing are in the chain; the Turkish certificate, produced after them, must not include them.
    expect((await fetch(`${app.url}/api/v1/key/envelopes/${other.envelopeId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } })).status).toBe(200);
    const answers = await Promise.all([0, 1].map(() => fetchCertificate(other.envelopeId, '?locale=tr-TR')));
    for (const answer of answers) expect(answer.status).toBe(200);
    expect(answers[1]!.bytes.equals(answers[0]!.bytes)).toBe(true);
    const again = await fetchCertificate(other.envelopeId, '?locale=tr-TR');
    expect(again.bytes.equals(answers[0]!.bytes)).toBe(true);
    const [row] = await app.orm.em.fork().execute<{ certificates: any }[]>('select certificates from envelope where id = ?', [other.envelopeId]);
    const { 'en-US': en, 'tr-TR': tr } = row!.certificates;
    expect(createHash('sha256').update(answers[0]!.bytes).digest('hex')).toBe(tr.sha256);
    expect(createHash('sha256').update(english.bytes).digest('hex')).toBe(en.sha256);
    expect({ chainSeq: tr.chainSeq, chainHead: tr.chainHead, generatedAt: tr.generatedAt }).toEqual({ chainSeq: en.chainSeq, chainHead: en.chainHead, generatedAt: en.generatedAt });
    // The same content in the other language: the same events (their hashes in the appendix), documents and times.
    const englishText = text(save(english.bytes, 'lazy-en.pdf'));
    const turkishText = text(save(answers[0]!.bytes, 'lazy-tr.pdf'));
    // The raw appendix is written alike in both languages: `#seq type hash details` per event.
    const appendix = (flat: string, heading: string) => [...flat.slice(flat.indexOf(heading)).matchAll(/#(\d+) ([a-z_]+\.[a-z_.]+)/g)].map((match) => `${match[1]} ${match[2]}`);
    const englishEvents = appendix(englishText, headings['en-US'][6]);
    expect(englishEvents.length).toBe(en.chainSeq);
    expect(appendix(turkishText, headings['tr-TR'][6])).toEqual(englishEvents);
    expect(englishEvents.join(' ')).not.toContain('artefact.downloaded');
    expect(turkishText).toContain(en.chainHead);
    const times = (flat: string) => [...flat.matchAll(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/g)].map((match) => match[0]).sort();
    expect(times(turkishText)).toEqual(times(englishText));
    expect(pdfsig(save(answers[0]!.bytes, 'lazy-tr.pdf'))).toContain('Signature is Valid.');
  }, 240_000);

  it('of an envelope closed before certificates were fixed is produced on the first download, once under concurrent downloads', async () => {
    const other = await finalizedEnvelope();
    await app.orm.em.fork().execute('update envelope set certificates = null where id = ?', [other.envelopeId]);
    const answers = await Promise.all([0, 1, 2].map(() => fetchCertificate(other.envelopeId)));
    for (const answer of answers) expect(answer.status).toBe(200);
    expect(answers[1]!.bytes.equals(answers[0]!.bytes)).toBe(true);
    expect(answers[2]!.bytes.equals(answers[0]!.bytes)).toBe(true);
    const [row] = await app.orm.em.fork().execute<{ certificates: any }[]>('select certificates from envelope where id = ?', [other.envelopeId]);
    expect(createHash('sha256').update(answers[0]!.bytes).digest('hex')).toBe(row!.certificates['en-US'].sha256);
  }, 240_000);

  it('of a voided envelope is fixed by the artefact.certificate job, in Turkish without English words', async () => {
    const voided = await buildEnvelope(app, team.apiKey, { name: 'İptal edilecek sözleşme', recipients: [{ identifier: 'kiraci', agents: [{ info: people.kiraci }] }] });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${voided.envelopeId}/send`)).status).toBe(200);
    expect((await restClient(app, team.apiKey).post(`/envelopes/${voided.envelopeId}/void`, { reason: 'Koşullar değişti' })).status).toBe(200);
    await artefactWorker().drain();
    const [closing] = await app.orm.em.fork().execute<{ certificates: any }[]>('select certificates from envelope where id = ?', [voided.envelopeId]);
    expect(Object.keys(closing!.certificates).sort()).toEqual(['en-US']);
    const answer = await fetchCertificate(voided.envelopeId, '?locale=tr-TR');
    const [row] = await app.orm.em.fork().execute<{ certificates: any }[]>('select certificates from envelope where id = ?', [voided.envelopeId]);
    expect(Object.keys(row!.certificates).sort()).toEqual(['en-US', 'tr-TR']);
    expect(createHash('sha256').update(answer.bytes).digest('hex')).toBe(row!.certificates['tr-TR'].sha256);
    const flat = text(save(answer.bytes, 'voided-tr.pdf'));
    expect(flat).toContain('Durum: iptal edildi');
    expect(flat).toContain('zarfı iptal etti: “Koşullar değişti”');
    expect(flat.slice(0, flat.indexOf('Ek: olayların ham ayrıntıları'))).not.toMatch(/\b(finalized|voided|expired|sent|signer|declined|completed|not sealed)\b/i);
  }, 240_000);
});

/** A ZIP with the same entries, one of them replaced (stored, so nothing else changes). */
async function rezip(entries: Map<string, Buffer>): Promise<Buffer> {
  const archive = new ZipArchive({ store: true });
  const chunks: Buffer[] = [];
  archive.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    archive.on('end', () => resolve());
    archive.on('error', reject);
  });
  for (const [name, bytes] of entries) archive.append(bytes, { name });
  await archive.finalize();
  await ended;
  return Buffer.concat(chunks);
}

function verifyPackageCli(file: string, ...args: string[]) {
  const run = spawnSync(process.execPath, ['src/cli/main.ts', 'verify-package', file, ...args], { encoding: 'utf8', env: { ...process.env, DATA_DIR: testSealDataDir() } });
  return { status: run.status, report: run.stdout ? JSON.parse(run.stdout) : null, stderr: run.stderr };
}

describe('the evidence package', () => {
  it('is refused before the envelope closes (Envelope.NotFinalized) on both faces', async () => {
    const sent = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'kiraci' }] });
    expect((await restClient(app, team.apiKey).put(`/envelopes/${sent.envelopeId}/send`)).status).toBe(200);
    const rest = await fetch(`${app.url}/api/v1/key/envelopes/${sent.envelopeId}/evidence`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(rest.status).toBe(409);
    expect(((await rest.json()) as any).error).toMatchObject({ name: 'Envelope.NotFinalized', context: { status: 'sent' } });
    expect(firstErrorName(await graphqlClient(app, team.apiKey)('query($id: ID!) { evidencePackageUrl(envelopeId: $id) { url } }', { id: sent.envelopeId }))).toBe('Envelope.NotFinalized');
  }, 240_000);

  it('verifies offline with verify-package, and one flipped byte in any part fails naming the part (REST and GraphQL)', async () => {
    const built = await finalizedEnvelope();
    const response = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/evidence`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/zip');
    const bytes = Buffer.from(await response.arrayBuffer());
    const file = save(bytes, 'evidence.zip');

    const { entries } = readZip(bytes);
    const names = [...entries.keys()].sort();
    expect(names).toEqual(
      expect.arrayContaining([
        'README.txt',
        'manifest.json',
        'manifest.json.p7s',
        'audit/audit-chain.jsonl',
        'certificate/certificate-en-US.pdf',
        'certificate/certificate-tr-TR.pdf',
        'biometrics/kefil-kalem.json',
      ]),
    );
    expect(names.filter((name) => name.startsWith('documents/'))).toHaveLength(2);
    // The chain is exactly what audit verify checks: every line, in order, up to the package's download.
    const chain = entries
      .get('audit/audit-chain.jsonl')!
      .toString('utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const trail = (await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/audit`)).body.payload.events;
    expect(chain.map((event: any) => event.hash)).toEqual(trail.slice(0, chain.length).map((event: any) => event.hash));
    expect(trail[chain.length]).toMatchObject({ type: 'artefact.downloaded', details: { format: 'evidence' } });
    const biometric = JSON.parse(entries.get('biometrics/kefil-kalem.json')!.toString('utf8'));
    expect(biometric.strokes).toEqual(strokes);
    // The fixed certificate is the one every download answers.
    const certificate = await fetchCertificate(built.envelopeId);
    expect(entries.get('certificate/certificate-en-US.pdf')!.equals(certificate.bytes)).toBe(true);
    expect(entries.get('README.txt')!.toString('utf8')).toContain('verify-package');

    const withKey = verifyPackageCli(file, '--audit-key', TEST_AUDIT_KEY);
    expect(withKey.status, withKey.stderr).toBe(0);
    expect(withKey.report).toMatchObject({ valid: true, envelopeId: built.envelopeId, failures: [], chain: { linked: true, hmacChecked: true, length: chain.length } });
    const withoutKey = verifyPackageCli(file);
    expect(withoutKey.status).toBe(0);
    expect(withoutKey.report.chain.hmacChecked).toBe(false);
    // A wrong key: every hash recomputed differs.
    const wrongKey = verifyPackageCli(file, '--audit-key', 'another-key-0123456789abcdef0123456789');
    expect(wrongKey.status).toBe(2);
    expect(wrongKey.report.failures).toEqual(['audit/audit-chain.jsonl']);

    for (const name of names) {
      const flipped = new Map(entries);
      const original = entries.get(name)!;
      const changed = Buffer.from(original);
      const at = Math.floor(changed.length / 2);
      changed[at] = changed[at]! ^ 0x01;
      flipped.set(name, changed);
      const report = await verifyEvidencePackage(await rezip(flipped), {
        auditKey: Buffer.from(TEST_AUDIT_KEY),
        trustedSeals: [{ fingerprintSha256: testSealCertificate().fingerprintSha256, source: 'installation' }],
      });
      expect(report.valid, `a flipped byte in ${name}`).toBe(false);
      expect(report.failures[0], `a flipped byte in ${name}: ${JSON.stringify(report.failures)}`).toBe(name);
    }
    // The command line says it too, with its exit code.
    const tampered = new Map(entries);
    const document = names.find((name) => name.startsWith('documents/'))!;
    const changed = Buffer.from(entries.get(document)!);
    changed[100] = changed[100]! ^ 0x01;
    tampered.set(document, changed);
    const tamperedFile = save(await rezip(tampered), 'tampered.zip');
    const cli = verifyPackageCli(tamperedFile);
    expect(cli.status).toBe(2);
    expect(cli.report.failures).toEqual([document]);

    // GraphQL: a signed URL for the same package.
    const link = await graphqlClient(app, team.apiKey)('query($id: ID!) { evidencePackageUrl(envelopeId: $id) { url expiresAt } }', { id: built.envelopeId });
    expect(link.errors).toBeUndefined();
    const viaLink = await fetch(`${app.url}${new URL(link.data.evidencePackageUrl.url).pathname}`);
    expect(viaLink.status).toBe(200);
    const linked = Buffer.from(await viaLink.arrayBuffer());
    expect(
      (await verifyEvidencePackage(linked, { auditKey: Buffer.from(TEST_AUDIT_KEY), trustedSeals: [{ fingerprintSha256: testSealCertificate().fingerprintSha256, source: 'installation' }] }))
        .valid,
    ).toBe(true);
  }, 240_000);
});
