import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PDFDocument } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealEnvelopeArtefacts } from '../src/domain/artefact/artefact.service.ts';
import { artefactSealHandler } from '../src/domain/artefact/seal.job.ts';
import { createOutboxWorker } from '../src/domain/outbox/outbox-worker.ts';
import { OUTBOX_TOPICS } from '../src/domain/outbox/topics.ts';
import { PDF_INFLATED_BYTES_LIMIT } from '../src/domain/pdf/inspect/inspect.ts';
import type { PdfWorkers } from '../src/domain/pdf/worker-pool.ts';
import { type Clock, createClock } from '../src/shared/clock.ts';
import { createLogger } from '../src/shared/logger.ts';
import { makeInflatingPdf, makePdf } from './fixtures/pdfs.ts';
import { unknownId, uploadDocument } from './helpers/envelopes.ts';
import { eventually } from './helpers/eventually.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp, testSealDataDir } from './helpers/harness.ts';
import { pdfsig, wordBoxes } from './helpers/pdf-tools.ts';
import { buildEnvelope, signAndComplete, tokenFor } from './helpers/signing.ts';

let app: TestApp;
let team: SeededTeam;
let directory: string;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'artefacts-'));
});
afterAll(async () => {
  fs.rmSync(directory, { recursive: true, force: true });
  await app.close();
});

function dependencies(pdfWorkers: PdfWorkers = app.dependencies.pdfWorkers) {
  const { blobStore, seal, auditKey, clock, config } = app.dependencies;
  return { blobStore, pdfWorkers, seal, auditKey, clock, publicUrl: config.publicUrl };
}

/** The outbox worker as main.ts runs it, kept to this test's team (other files share the database). */
function workerFor(teamId: string, options: { pdfWorkers?: PdfWorkers; leaseMs?: number; renewIntervalMs?: number; clock?: Clock } = {}) {
  return createOutboxWorker({
    em: app.orm.em,
    clock: options.clock ?? app.dependencies.clock,
    logger: createLogger('silent'),
    leaseMs: options.leaseMs,
    renewIntervalMs: options.renewIntervalMs,
    payloadMatch: { teamId },
    handlers: new Map([[OUTBOX_TOPICS.sealArtefacts, artefactSealHandler(dependencies(options.pdfWorkers))]]),
  });
}

/** A sent envelope with one signer; `documents` extra documents besides buildEnvelope's one. */
async function sentEnvelope(apiKey: string, options: { extraDocuments?: { name: string }[] } = {}) {
  const built = await buildEnvelope(app, apiKey, {
    recipients: [
      {
        identifier: 'signer',
        fields: [
          { identifier: 'signature', required: true },
          { identifier: 'note', type: 'text', required: false, value: { text: 'Peşin ödeme' } },
        ],
      },
    ],
  });
  const documentIds = [built.documentId];
  for (const extra of options.extraDocuments ?? []) {
    const uploaded = await uploadDocument(app, apiKey, built.envelopeId, { bytes: await makePdf({ pages: 1 }) }, { name: extra.name });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    documentIds.push(uploaded.body.payload.document.id);
  }
  expect((await restClient(app, apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  return { ...built, documentIds };
}

async function finalize(built: { envelopeId: string; recipients: Record<string, string> }, apiKey = team.apiKey) {
  const result = await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.signer!));
  expect(result.errors, JSON.stringify(result.errors)).toBeUndefined();
  const status = await restClient(app, apiKey).get(`/envelopes/${built.envelopeId}`);
  expect(status.body.payload.envelope.status).toBe('finalized');
}

async function download(apiKey: string, url: string): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const response = await fetch(`${app.url}/api/v1/key${url}`, { headers: { 'x-service-api-key': apiKey } });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

function save(bytes: Buffer, name: string): string {
  const file = path.join(directory, name);
  fs.writeFileSync(file, bytes);
  return file;
}

async function sealedHashes(envelopeId: string): Promise<(string | null)[]> {
  const rows = await app.orm.em.fork().execute<{ sealed_sha256: string | null }[]>(`select sealed_sha256 from document where envelope_id = ? order by "order", id`, [envelopeId]);
  return rows.map((row) => row.sealed_sha256);
}

async function auditTypes(envelopeId: string): Promise<{ type: string; details: any }[]> {
  return app.orm.em.fork().execute(`select type, details from audit_event where stream_id = ? order by seq`, [envelopeId]);
}

describe('downloads before finalization', () => {
  it('give a draft copy: values drawn, every page marked, no seal', async () => {
    const built = await sentEnvelope(team.apiKey);
    const answer = await download(team.apiKey, `/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/pdf');
    const file = save(answer.bytes, 'draft.pdf');
    const pages = wordBoxes(file);
    expect(pages).toHaveLength(2);
    for (const words of pages) expect(words.map((word) => word.text)).toContain('DRAFT');
    expect(pages[0]!.map((word) => word.text)).toContain('Peşin');
    expect(pdfsig(file)).toMatch(/does not contain any signatures/);
    const events = await auditTypes(built.envelopeId);
    expect(events.at(-1)).toMatchObject({ type: 'artefact.downloaded', details: { format: 'pdf', sealed: false, documentIds: [built.documentId] } });
  });
});

describe('download file names', () => {
  it("are named in filename* with RFC 8187's attr-char only: ' ( ) are percent-encoded too", async () => {
    const built = await sentEnvelope(team.apiKey, { extraDocuments: [{ name: "O'Brien (v2) final" }] });
    const answer = await download(team.apiKey, `/envelopes/${built.envelopeId}/documents/${built.documentIds[1]}/pdf`);
    expect(answer.status).toBe(200);
    const disposition = answer.headers.get('content-disposition')!;
    const extended = /filename\*=UTF-8''(\S+)$/.exec(disposition)?.[1];
    expect(extended, disposition).toMatch(/^([A-Za-z0-9!#$&+\-.^_`|~]|%[0-9A-F]{2})+$/);
    expect(extended).toContain('O%27Brien%20%28v2%29%20final');
    expect(decodeURIComponent(extended!)).toMatch(/^O'Brien \(v2\) final.*\.pdf$/);
  });
});

describe('sealing after finalization', () => {
  it('the artefact job seals each document once: pdfsig reports a valid ETSI.CAdES.detached signature over the whole file, one flipped byte breaks it', async () => {
    const built = await sentEnvelope(team.apiKey, { extraDocuments: [{ name: 'Annex' }] });
    await finalize(built);
    expect(await sealedHashes(built.envelopeId)).toEqual([null, null]);
    const worker = workerFor(team.teamId);
    expect(await worker.drain()).toBeGreaterThanOrEqual(1);
    const hashes = await sealedHashes(built.envelopeId);
    expect(hashes.every((hash) => typeof hash === 'string')).toBe(true);

    const answer = await download(team.apiKey, `/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`);
    expect(answer.status).toBe(200);
    expect(createHash('sha256').update(answer.bytes).digest('hex')).toBe(hashes[0]);
    const file = save(answer.bytes, 'sealed.pdf');
    const report = pdfsig(file);
    expect(report).toContain('Signature Type: ETSI.CAdES.detached');
    expect(report).toContain('Signing Hash Algorithm: SHA-256');
    expect(report).toContain('Total document signed');
    expect(report).toContain('Signature Validation: Signature is Valid.');
    const words = wordBoxes(file)
      .flat()
      .map((word) => word.text);
    expect(words).toContain('Lovelace');
    expect(words).not.toContain('DRAFT');

    // One byte in the middle of the first signed range (before the signature's /Contents).
    const firstRangeEnd = Number(/\/ByteRange \[0 (\d+)/.exec(answer.bytes.toString('latin1'))![1]);
    const flipped = Buffer.from(answer.bytes);
    flipped[Math.floor(firstRangeEnd / 2)] ^= 0x01;
    expect(pdfsig(save(flipped, 'flipped.pdf'))).not.toContain('Signature is Valid.');

    const sealedEvents = (await auditTypes(built.envelopeId)).filter((event) => event.type === 'artefact.sealed');
    expect(sealedEvents.map((event) => event.details.sealedSha256).sort()).toEqual([...hashes].sort());
  });

  it('a job that dies mid-way is taken again after its lease: every document sealed exactly once', async () => {
    const other = await seedTeam(app);
    const built = await sentEnvelope(other.apiKey, { extraDocuments: [{ name: 'Two' }, { name: 'Three' }] });
    await finalize(built, other.apiKey);
    // The first run seals one document, then its process "dies" on the second: the render never
    // returns and, as in a killed process, nothing renews its lease any more. The third, rendered
    // meanwhile (two documents are in flight), waits to be recorded after the second: not by this run.
    let renders = 0;
    const dying: PdfWorkers = {
      ...app.dependencies.pdfWorkers,
      render: (task, options) => {
        renders += 1;
        return task.seal?.info.reason?.includes(built.documentIds[1]!) ? new Promise(() => undefined) : app.dependencies.pdfWorkers.render(task, options);
      },
    };
    void workerFor(other.teamId, { pdfWorkers: dying, leaseMs: 60_000, renewIntervalMs: 3_600_000 }).drain(1);
    await eventually(
      async () => {
        expect({ renders, sealed: (await sealedHashes(built.envelopeId)).map(Boolean) }).toEqual({ renders: 3, sealed: [true, false, false] });
        return true;
      },
      { what: "the dying worker's first document recorded and its third rendered" },
    );
    expect((await sealedHashes(built.envelopeId)).map(Boolean)).toEqual([true, false, false]);
    // The restarted instance finds the claim still leased, then takes it once the lease ran out.
    // Its clock moves past the lease, however long this machine took over the first document.
    const restartedClock = createClock();
    const restarted = workerFor(other.teamId, { clock: restartedClock });
    expect(await restarted.drain()).toBe(0);
    restartedClock.advance(61);
    expect(await restarted.drain()).toBe(1);
    const hashes = await sealedHashes(built.envelopeId);
    expect(hashes.every((hash) => typeof hash === 'string')).toBe(true);
    const sealedEvents = (await auditTypes(built.envelopeId)).filter((event) => event.type === 'artefact.sealed');
    expect(sealedEvents).toHaveLength(3);
    expect(new Set(sealedEvents.map((event) => event.details.documentId)).size).toBe(3);
    const [row] = await app.orm.em
      .fork()
      .execute<{ attempts: number; processed_at: unknown }[]>(`select attempts, processed_at from outbox_message where dedupe_key = ?`, [`artefact.seal:${built.envelopeId}`]);
    expect(row).toMatchObject({ attempts: 2 });
    expect(row!.processed_at).not.toBeNull();
  });

  it('a document that cannot be sealed fails the run after those before it are recorded; the next run seals the rest in order', async () => {
    const other = await seedTeam(app);
    const built = await sentEnvelope(other.apiKey, { extraDocuments: [{ name: 'Two' }, { name: 'Three' }] });
    await finalize(built, other.apiKey);
    const failing: PdfWorkers = {
      ...app.dependencies.pdfWorkers,
      render: (task, options) =>
        task.seal?.info.reason?.includes(built.documentIds[1]!) ? Promise.reject(new Error('the PDF thread failed')) : app.dependencies.pdfWorkers.render(task, options),
    };
    await expect(sealEnvelopeArtefacts({ ...dependencies(failing), em: app.orm.em.fork() }, built.envelopeId)).rejects.toThrow('the PDF thread failed');
    expect((await sealedHashes(built.envelopeId)).map(Boolean)).toEqual([true, false, false]);
    expect(await sealEnvelopeArtefacts({ ...dependencies(), em: app.orm.em.fork() }, built.envelopeId)).toBe(2);
    const sealedEvents = (await auditTypes(built.envelopeId)).filter((event) => event.type === 'artefact.sealed');
    expect(sealedEvents.map((event) => event.details.documentId)).toEqual(built.documentIds);
  });

  it('two sealers racing (the job and a download) record one sealed file per document', async () => {
    const other = await seedTeam(app);
    const built = await sentEnvelope(other.apiKey, { extraDocuments: [{ name: 'Two' }] });
    await finalize(built, other.apiKey);
    const [first, second] = await Promise.all([
      sealEnvelopeArtefacts({ ...dependencies(), em: app.orm.em.fork() }, built.envelopeId),
      sealEnvelopeArtefacts({ ...dependencies(), em: app.orm.em.fork() }, built.envelopeId),
    ]);
    expect(first + second).toBeGreaterThanOrEqual(2);
    const sealedEvents = (await auditTypes(built.envelopeId)).filter((event) => event.type === 'artefact.sealed');
    expect(sealedEvents).toHaveLength(2);
    const hashes = await sealedHashes(built.envelopeId);
    expect(sealedEvents.map((event) => event.details.sealedSha256).sort()).toEqual([...hashes].sort());
  });
});

describe('the ZIP of all documents', () => {
  it('holds one entry per document, named safely and uniquely, each identical to the single download', async () => {
    const built = await sentEnvelope(team.apiKey, { extraDocuments: [{ name: 'Ek: şartlar/2026' }, { name: 'Ek: şartlar/2026' }] });
    await finalize(built);
    const zip = await download(team.apiKey, `/envelopes/${built.envelopeId}/pdf`);
    expect(zip.status).toBe(200);
    expect(zip.headers.get('content-type')).toBe('application/zip');
    const zipFile = save(zip.bytes, 'all.zip');
    const listing = execFileSync('zipinfo', ['-1', zipFile], { encoding: 'utf8' }).trim().split('\n');
    expect(listing).toHaveLength(3);
    expect(listing.slice(1)).toEqual(['Ek_ şartlar_2026.pdf', 'Ek_ şartlar_2026 (2).pdf']);
    for (const [index, documentId] of built.documentIds.entries()) {
      const single = await download(team.apiKey, `/envelopes/${built.envelopeId}/documents/${documentId}/pdf`);
      const entry = execFileSync('unzip', ['-p', zipFile, listing[index]!.replace(/([[\]*?])/g, '\\$1')]);
      expect(Buffer.compare(entry, single.bytes)).toBe(0);
    }
    const downloads = (await auditTypes(built.envelopeId)).filter((event) => event.type === 'artefact.downloaded');
    expect(downloads[0]).toMatchObject({ details: { format: 'zip', sealed: true, documentIds: built.documentIds } });
    // Every entry carries the finalization time (local time, 2-second steps, as ZIP keeps it), not 1980-01-01.
    const [{ completed_at: completedAt }] = await app.orm.em.fork().execute<{ completed_at: Date }[]>('select completed_at from envelope where id = ?', [built.envelopeId]);
    const times = execFileSync('zipinfo', ['-T', zipFile], { encoding: 'utf8' })
      .split('\n')
      .map((line) => /\s(\d{4})(\d{2})(\d{2})\.(\d{2})(\d{2})(\d{2})\s/.exec(line))
      .filter((match) => match !== null)
      .map((match) => new Date(Number(match![1]), Number(match![2]) - 1, Number(match![3]), Number(match![4]), Number(match![5]), Number(match![6])).getTime());
    expect(times).toHaveLength(3);
    for (const time of times) expect(Math.abs(time - new Date(completedAt).getTime())).toBeLessThanOrEqual(2_000);
  });
});

describe('GraphQL verifySealedPdf', () => {
  const QUERY =
    'query($file: Upload!) { verifySealedPdf(file: $file) { valid ours envelopeId signatures { subFilter valid coversWholeFile ours documentId signerSubject timestamp { valid } } auditChain { valid } } }';
  async function verifyThroughGraphql(apiKey: string, bytes: Buffer) {
    const form = new FormData();
    form.append('operations', JSON.stringify({ query: QUERY, variables: { file: null } }));
    form.append('map', JSON.stringify({ 0: ['variables.file'] }));
    form.append('0', new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), 'sealed.pdf');
    const response = await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'x-service-api-key': apiKey }, body: form });
    return (await response.json()) as { data?: any; errors?: any[] };
  }

  it('reports the seal and the named envelope’s audit chain; a changed byte is invalid; another team sees no chain', async () => {
    const built = await sentEnvelope(team.apiKey);
    await finalize(built);
    const sealed = await download(team.apiKey, `/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`);
    const good = await verifyThroughGraphql(team.apiKey, sealed.bytes);
    expect(good.errors, JSON.stringify(good.errors)).toBeUndefined();
    expect(good.data.verifySealedPdf).toMatchObject({ valid: true, ours: true, envelopeId: built.envelopeId, auditChain: { valid: true } });
    expect(good.data.verifySealedPdf.signatures[0]).toMatchObject({ subFilter: 'ETSI.CAdES.detached', valid: true, coversWholeFile: true, documentId: built.documentId, timestamp: null });

    const firstRangeEnd = Number(/\/ByteRange \[0 (\d+)/.exec(sealed.bytes.toString('latin1'))![1]);
    const changed = Buffer.from(sealed.bytes);
    changed[Math.floor(firstRangeEnd / 2)] ^= 0x01;
    expect((await verifyThroughGraphql(team.apiKey, changed)).data.verifySealedPdf.valid).toBe(false);

    const stranger = await seedTeam(app);
    const foreign = await verifyThroughGraphql(stranger.apiKey, sealed.bytes);
    expect(foreign.data.verifySealedPdf).toMatchObject({ valid: true, ours: true, auditChain: null });

    // The REST twin: POST /verify, multipart, the file in `document`.
    const form = new FormData();
    form.append('document', new Blob([sealed.bytes as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), 'sealed.pdf');
    const rest = await fetch(`${app.url}/api/v1/key/verify`, { method: 'POST', headers: { 'x-service-api-key': team.apiKey }, body: form });
    const body = (await rest.json()) as any;
    expect(body.payload.verification).toMatchObject({ valid: true, ours: true, envelopeId: built.envelopeId, auditChain: { valid: true } });
  });
});

describe('the ZIP when the client goes away', () => {
  it('stops rendering the remaining documents', async () => {
    const built = await sentEnvelope(team.apiKey, { extraDocuments: [{ name: 'b' }, { name: 'c' }, { name: 'd' }, { name: 'e' }, { name: 'f' }] });
    const pool = app.dependencies.pdfWorkers;
    const original = pool.render;
    const zips = app.dependencies.metrics!.zipDownloads;
    const clientGone = async () => (await zips.get()).values.find((value) => value.labels.outcome === 'client_gone')?.value ?? 0;
    const goneBefore = await clientGone();
    let renders = 0;
    // Each draft copy waits for the test, as a large document would keep the worker busy: the first
    // until the client is reading, every later one until the client has gone away.
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    let releaseLater!: () => void;
    const laterHeld = new Promise<void>((resolve) => (releaseLater = resolve));
    pool.render = async (task, options) => {
      renders += 1;
      await (renders === 1 ? firstHeld : laterHeld);
      return original(task, options);
    };
    try {
      const controller = new AbortController();
      const responding = fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/pdf`, { headers: { 'x-service-api-key': team.apiKey }, signal: controller.signal });
      await eventually(() => renders === 1, { what: 'the first document being rendered' });
      releaseFirst();
      const reader = (await responding).body!.getReader();
      await reader.read();
      // The first entry is out; the service has gone on to the second document, still rendering.
      await eventually(() => renders === 2, { what: 'the second document being rendered' });
      controller.abort();
      releaseLater();
      // The service counts how each ZIP ends: wait for this one to end as "the client went away".
      await eventually(async () => (await clientGone()) > goneBefore, { what: 'the ZIP to stop for the client that went away' });
      // The first two documents, and a third only if the second was written before the service heard
      // the connection close: never the other three. Without the check, all six are rendered before
      // the ZIP ends.
      expect(renders).toBeLessThanOrEqual(3);
    } finally {
      pool.render = original;
    }
  });
});

describe('refusals', () => {
  it('another team’s envelope or document is byte-identical to an unknown one', async () => {
    const built = await sentEnvelope(team.apiKey);
    const stranger = await seedTeam(app);
    const foreign = await download(stranger.apiKey, `/envelopes/${built.envelopeId}/pdf`);
    const unknown = await download(stranger.apiKey, `/envelopes/${unknownId}/pdf`);
    expect(foreign.status).toBe(404);
    expect(JSON.parse(foreign.bytes.toString()).error.name).toBe('Envelope.NotFound');
    const strip = (bytes: Buffer) =>
      bytes
        .toString()
        .replace(unknownId, built.envelopeId)
        .replace(/"requestId":"[^"]*"/, '');
    expect(strip(unknown.bytes)).toBe(strip(foreign.bytes));
    const foreignDocument = await download(stranger.apiKey, `/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`);
    expect(JSON.parse(foreignDocument.bytes.toString()).error.name).toBe('Envelope.NotFound');
    const missingDocument = await download(team.apiKey, `/envelopes/${built.envelopeId}/documents/${unknownId}/pdf`);
    expect(missingDocument.status).toBe(404);
    expect(JSON.parse(missingDocument.bytes.toString()).error.name).toBe('Document.NotFound');
  });
});

describe('signed download URLs (GraphQL)', () => {
  const QUERY = 'query($envelopeId: ID!, $documentId: ID) { downloadUrl(envelopeId: $envelopeId, documentId: $documentId) { url expiresAt } }';
  /** The URL is built on PUBLIC_URL; the test server listens elsewhere. */
  const local = (url: string) => `${app.url}${new URL(url).pathname}`;

  it('fetch the same file as the REST download without the key header, for a few minutes only; altered links are refused', async () => {
    const built = await sentEnvelope(team.apiKey);
    await finalize(built);
    const answer = await graphqlClient(app, team.apiKey)(QUERY, { envelopeId: built.envelopeId, documentId: built.documentId });
    expect(answer.errors).toBeUndefined();
    const link = answer.data.downloadUrl;
    expect(Date.parse(link.expiresAt) - Date.now()).toBeLessThanOrEqual(300_000);
    const fetched = await fetch(local(link.url));
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get('content-type')).toBe('application/pdf');
    const rest = await download(team.apiKey, `/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`);
    expect(Buffer.compare(Buffer.from(await fetched.arrayBuffer()), rest.bytes)).toBe(0);

    const zipLink = (await graphqlClient(app, team.apiKey)(QUERY, { envelopeId: built.envelopeId })).data.downloadUrl;
    const zip = await fetch(local(zipLink.url));
    expect(zip.headers.get('content-type')).toBe('application/zip');
    await zip.arrayBuffer();

    const downloads = (await auditTypes(built.envelopeId)).filter((event) => event.type === 'artefact.downloaded');
    expect(downloads.map((event) => event.details.format)).toEqual(['pdf', 'pdf', 'zip']);

    const altered = local(link.url).replace(/.$/, (last) => (last === 'A' ? 'B' : 'A'));
    const refused = await fetch(altered);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error.name).toBe('Download.InvalidLink');

    app.dependencies.clock.advance(301);
    const expired = await fetch(local(link.url));
    expect(expired.status).toBe(403);
    expect(((await expired.json()) as any).error).toMatchObject({ name: 'Download.InvalidLink', context: { reason: 'expired' } });
  });

  it('are refused for another team’s envelope and an unknown document as the downloads are', async () => {
    const built = await sentEnvelope(team.apiKey);
    const stranger = await seedTeam(app);
    expect(firstErrorName(await graphqlClient(app, stranger.apiKey)(QUERY, { envelopeId: built.envelopeId }))).toBe('Envelope.NotFound');
    expect(firstErrorName(await graphqlClient(app, stranger.apiKey)(QUERY, { envelopeId: unknownId }))).toBe('Envelope.NotFound');
    expect(firstErrorName(await graphqlClient(app, team.apiKey)(QUERY, { envelopeId: built.envelopeId, documentId: unknownId }))).toBe('Document.NotFound');
  });
});

describe('PDFs from the wild', () => {
  async function encrypted(args: string[]): Promise<Buffer> {
    const plain = save(Buffer.from(await makePdf({ pages: 1 })), `plain-${args.join('-')}.pdf`);
    const out = `${plain}.enc.pdf`;
    execFileSync('qpdf', ['--allow-weak-crypto', '--encrypt', ...args, '--', plain, out]);
    return fs.readFileSync(out);
  }

  it.each([
    ['RC4-40', ['', 'owner-secret', '40']],
    ['AES-128', ['', 'owner-secret', '128', '--use-aes=y']],
    ['AES-256', ['', 'owner-secret', '256']],
  ])('an owner-password-only PDF (%s) uploads as it came, is signed, sealed and validates', async (_name, args) => {
    const bytes = await encrypted(args);
    const other = await seedTeam(app);
    const rest = restClient(app, other.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Restricted form' })).body.payload.envelopeId;
    const uploaded = await uploadDocument(app, other.apiKey, envelopeId, { bytes }, { name: 'Bank form' });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    const document = uploaded.body.payload.document;
    // The original is kept byte for byte.
    expect(document.sha256 ?? document.contentSha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    const signer = (
      await rest.post(`/envelopes/${envelopeId}/recipients`, {
        recipient: { type: 'signer', identifier: 'signer', roleName: 'Signer', order: 1, required: true, agents: [{ info: { name: 'Ayşe', email: 'ayse@example.com' } }] },
      })
    ).body.payload.recipient.id;
    const field = await rest.post(`/envelopes/${envelopeId}/fields`, {
      fields: [
        {
          type: 'simple_signature',
          recipientId: signer,
          identifier: 'sig',
          required: true,
          views: [{ documentId: document.id, page: 0, location: { x: 40, y: 40 }, size: { width: 150, height: 30 } }],
        },
      ],
    });
    expect(field.status, JSON.stringify(field.body)).toBe(200);
    expect((await rest.put(`/envelopes/${envelopeId}/send`)).status).toBe(200);
    await finalize({ envelopeId, recipients: { signer } }, other.apiKey);
    const sealed = await download(other.apiKey, `/envelopes/${envelopeId}/documents/${document.id}/pdf`);
    expect(sealed.status).toBe(200);
    const file = save(sealed.bytes, `sealed-${_name}.pdf`);
    expect(pdfsig(file)).toContain('Signature is Valid.');
    expect(pdfsig(file)).toContain('Total document signed');
    expect(wordBoxes(file)[0]!.map((word) => word.text)).toContain('Lovelace');
  });

  it('a PDF that needs a password to open stays refused with Document.Encrypted', async () => {
    const bytes = await encrypted(['user-secret', 'owner-secret', '256']);
    const envelopeId = (await restClient(app, team.apiKey).post('/envelopes', { name: 'Locked' })).body.payload.envelopeId;
    const uploaded = await uploadDocument(app, team.apiKey, envelopeId, { bytes });
    expect(uploaded.status).toBe(422);
    expect(uploaded.body.error.name).toBe('Document.Encrypted');
  });

  it('a CropBox larger than its MediaBox gives the MediaBox size; a PDF already signed is accepted', async () => {
    const pdf = await PDFDocument.create();
    const page = pdf.addPage([612, 792]);
    page.setCropBox(-50, -50, 800, 1000);
    const envelopeId = (await restClient(app, team.apiKey).post('/envelopes', { name: 'Boxes' })).body.payload.envelopeId;
    const uploaded = await uploadDocument(app, team.apiKey, envelopeId, { bytes: await pdf.save() });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    const read = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/documents/${uploaded.body.payload.document.id}`);
    expect(JSON.stringify(read.body.payload.document)).toMatch(/"width":612,"height":792/);

    const built = await sentEnvelope(team.apiKey);
    await finalize(built);
    const signed = await download(team.apiKey, `/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`);
    const again = await uploadDocument(app, team.apiKey, envelopeId, { bytes: signed.bytes }, { name: 'Already signed' });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
  });
});

describe('a document that inflates to near the limit', () => {
  const MiB = 1024 * 1024;

  it("uploads, is sealed within the PDF worker's limits, and the memory sealing took is given back", async () => {
    // 240 MiB of object stream (in a file of a quarter of a megabyte), which pdf-lib inflates
    // when it loads the file to seal it: in buffers outside the worker's heap limit.
    const bytes = await makeInflatingPdf({ inflatedBytes: PDF_INFLATED_BYTES_LIMIT - 16 * MiB, where: 'object_stream' });
    const other = await seedTeam(app);
    const rest = restClient(app, other.apiKey);
    const envelopeId = (await rest.post('/envelopes', { name: 'Heavy annex' })).body.payload.envelopeId;
    const uploaded = await uploadDocument(app, other.apiKey, envelopeId, { bytes }, { name: 'Annex' });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    const documentId = uploaded.body.payload.document.id;
    const signer = (
      await rest.post(`/envelopes/${envelopeId}/recipients`, {
        recipient: { type: 'signer', identifier: 'signer', roleName: 'Signer', order: 1, required: true, agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }] },
      })
    ).body.payload.recipient.id;
    const field = await rest.post(`/envelopes/${envelopeId}/fields`, {
      fields: [
        { type: 'simple_signature', recipientId: signer, identifier: 'sig', required: true, views: [{ documentId, page: 0, location: { x: 40, y: 40 }, size: { width: 150, height: 30 } }] },
      ],
    });
    expect(field.status, JSON.stringify(field.body)).toBe(200);
    expect((await rest.put(`/envelopes/${envelopeId}/send`)).status).toBe(200);
    await finalize({ envelopeId, recipients: { signer } }, other.apiKey);

    const residentBefore = process.memoryUsage.rss();
    expect(await workerFor(other.teamId).drain()).toBeGreaterThanOrEqual(1);
    const [sealedSha256] = await sealedHashes(envelopeId);
    expect(sealedSha256).toEqual(expect.any(String));
    const sealed = await download(other.apiKey, `/envelopes/${envelopeId}/documents/${documentId}/pdf`);
    expect(sealed.status).toBe(200);
    expect(pdfsig(save(sealed.bytes, 'sealed-heavy.pdf'))).toContain('Signature is Valid.');

    // Sealing grew this process by about 1.5 × 240 MiB (the worker thread's buffers). The worker
    // that held them is replaced once it is done, which gives them back to the system.
    let grownBy = process.memoryUsage.rss() - residentBefore;
    for (let waited = 0; grownBy > 128 * MiB && waited < 30_000; waited += 100) {
      await sleep(100);
      grownBy = process.memoryUsage.rss() - residentBefore;
    }
    expect(grownBy).toBeLessThan(128 * MiB);
  }, 120_000);
});

describe('npm run cli -- verify FILE.pdf', () => {
  function verify(file: string): { code: number; report: any } {
    try {
      const stdout = execFileSync(process.execPath, ['src/cli/main.ts', 'verify', file], { env: { ...process.env, DATA_DIR: testSealDataDir(), LOG_LEVEL: 'silent' }, encoding: 'utf8' });
      return { code: 0, report: JSON.parse(stdout) };
    } catch (error) {
      const failure = error as { status: number; stdout: string };
      return { code: failure.status, report: JSON.parse(failure.stdout) };
    }
  }

  it('checks a sealed PDF offline: valid, whole file, our seal, which envelope and document; a changed byte fails with exit 2', async () => {
    const built = await sentEnvelope(team.apiKey);
    await finalize(built);
    const sealed = await download(team.apiKey, `/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`);
    const good = verify(save(sealed.bytes, 'verify-good.pdf'));
    expect(good.code, JSON.stringify(good.report)).toBe(0);
    expect(good.report).toMatchObject({ valid: true, ours: true, envelopeId: built.envelopeId });
    expect(good.report.signatures[0]).toMatchObject({ subFilter: 'ETSI.CAdES.detached', valid: true, coversWholeFile: true, documentId: built.documentId, timestamp: null });
    expect(good.report.signatures[0].signer.subject).toContain('CN=Envelope Service Seal');

    const firstRangeEnd = Number(/\/ByteRange \[0 (\d+)/.exec(sealed.bytes.toString('latin1'))![1]);
    const changed = Buffer.from(sealed.bytes);
    changed[Math.floor(firstRangeEnd / 2)] ^= 0x01;
    const bad = verify(save(changed, 'verify-bad.pdf'));
    expect(bad.code).toBe(2);
    expect(bad.report.valid).toBe(false);

    // Bytes appended after the seal (an incremental update) are not covered.
    const appended = verify(save(Buffer.concat([sealed.bytes, Buffer.from('\n% appended\n')]), 'verify-appended.pdf'));
    expect(appended.code).toBe(2);
    expect(appended.report.signatures[0].coversWholeFile).toBe(false);
  });
});
