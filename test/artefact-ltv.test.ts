import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as pkijs from 'pkijs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSealCertificate } from '../src/domain/artefact/seal-certificate.ts';
import { appendUpdate, openForUpdate } from '../src/domain/pdf/incremental.ts';
import { appendDocumentTimestamp } from '../src/domain/pdf/ltv.ts';
import { cmsFromContents } from '../src/domain/pdf/verify.ts';
import { createClock } from '../src/shared/clock.ts';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { pdfsig } from './helpers/pdf-tools.ts';
import { startLocalPki } from './helpers/pki.ts';
import { buildEnvelope, signAndComplete, tokenFor } from './helpers/signing.ts';
import { startLocalTsa } from './helpers/tsa.ts';
import { sealWorkerFor } from './helpers/workers.ts';

/*
 * Long-term validation (issue 23): with a TSA, the seal is PAdES B-LT (a /DSS with the chain and
 * the OCSP response fetched from the certificate's AIA) and B-LTA (a /DocTimeStamp over the whole
 * file). A local CA, its OCSP responder (openssl ocsp) and a TSA (openssl ts) run on the loopback.
 */

let pki: Awaited<ReturnType<typeof startLocalPki>>;
let tsa: Awaited<ReturnType<typeof startLocalTsa>>;
let app: TestApp;
let plain: TestApp;
let directory: string;
beforeAll(async () => {
  pki = await startLocalPki();
  tsa = await startLocalTsa();
  const seal = loadSealCertificate({ sealP12Path: pki.p12Path, sealP12Password: pki.p12Password, dataDir: pki.directory });
  app = await startTestApp({ env: { TSA_URL: tsa.url }, seal });
  plain = await startTestApp({ seal });
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'ltv-test-'));
});
afterAll(async () => {
  await app.close();
  await plain.close();
  await tsa.close();
  await pki.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

async function finalizedEnvelope(on: TestApp) {
  const team = await seedTeam(on);
  const built = await buildEnvelope(on, team.apiKey, { recipients: [{ identifier: 'signer' }] });
  expect((await restClient(on, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  expect((await signAndComplete(on, await tokenFor(on, built.envelopeId, built.recipients.signer!))).errors).toBeUndefined();
  return { team, built };
}

async function download(on: TestApp, apiKey: string, envelopeId: string, documentId: string, name: string): Promise<string> {
  const response = await fetch(`${on.url}/api/v1/key/envelopes/${envelopeId}/documents/${documentId}/pdf`, { headers: { 'x-service-api-key': apiKey } });
  expect(response.status).toBe(200);
  const file = path.join(directory, name);
  fs.writeFileSync(file, Buffer.from(await response.arrayBuffer()));
  return file;
}

function cliVerify(file: string): { code: number; report: Record<string, any> } {
  try {
    const out = execFileSync(process.execPath, ['src/cli/main.ts', 'verify', file], { env: { ...process.env, SEAL_P12: pki.p12Path, SEAL_P12_PASSWORD: pki.p12Password }, encoding: 'utf8' });
    return { code: 0, report: JSON.parse(out) };
  } catch (error) {
    const failure = error as { status: number; stdout: string };
    return { code: failure.status, report: JSON.parse(failure.stdout) };
  }
}

/** The DER items of the file's /DSS array `key`, via qpdf (an independent reader). */
function dssItems(file: string, key: 'Certs' | 'OCSPs'): Buffer[] {
  const json = JSON.parse(execFileSync('qpdf', ['--json=2', '--json-stream-data=inline', '--decode-level=generalized', file], { encoding: 'utf8', maxBuffer: 64 << 20 }));
  const objects = json.qpdf[1] as Record<string, { value?: Record<string, unknown>; stream?: { dict: Record<string, unknown>; data: string } }>;
  const root = objects[`obj:${(objects.trailer!.value as { '/Root': string })['/Root']}`]!.value!;
  const dss = objects[`obj:${root['/DSS'] as string}`]!.value!;
  return ((dss[`/${key}`] as string[]) ?? []).map((ref) => Buffer.from(objects[`obj:${ref}`]!.stream!.data, 'base64'));
}

describe('the CMS in a signature placeholder', () => {
  it('ends where its DER length says, also when its own last bytes are zeros (a signature value ends in 0x00 once in 256)', () => {
    // SEQUENCE { INTEGER 0 } followed by the placeholder's zero padding.
    expect(cmsFromContents('3003020100' + '00'.repeat(20)).toString('hex')).toBe('3003020100');
    // A long-form length: SEQUENCE of 0x0102 bytes, the last of them zero.
    const long = `30820102${'ab'.repeat(0x101)}00`;
    expect(cmsFromContents(long + '0000').toString('hex')).toBe(long);
    expect(() => cmsFromContents('04020000')).toThrow(/no CMS/);
    expect(() => cmsFromContents('3010020100')).toThrow(/shorter/);
  });
});

describe('long-term validation', () => {
  it('with a TSA, the sealed document carries a /DSS with the chain and the OCSP response and ends with a /DocTimeStamp; pdfsig and openssl check both; verify says B-LTA', async () => {
    const { team, built } = await finalizedEnvelope(app);
    const before = pki.requests;
    expect(await sealWorkerFor(app, team.teamId).drain()).toBe(1);
    expect(pki.requests).toBeGreaterThan(before);
    const file = await download(app, team.apiKey, built.envelopeId, built.documentId, 'lta.pdf');
    const bytes = fs.readFileSync(file);

    // POST /verify and GraphQL verifySealedPdf say B-LTA, with both timestamps.
    const form = new FormData();
    form.append('document', new Blob([bytes], { type: 'application/pdf' }), 'lta.pdf');
    const rest = await fetch(`${app.url}/api/v1/key/verify`, { method: 'POST', headers: { 'x-service-api-key': team.apiKey }, body: form });
    const restBody = (await rest.json()) as { payload: { verification: Record<string, any> } };
    expect(restBody.payload.verification, JSON.stringify(restBody.payload.verification).slice(0, 3000)).toMatchObject({ valid: true, ours: true, level: 'B-LTA' });
    expect(restBody.payload.verification.timestamps).toHaveLength(2);
    const operations = JSON.stringify({
      query: 'query ($file: Upload!) { verifySealedPdf(file: $file) { valid level timestamps { type time valid } dss { certificates ocspResponses crls } } }',
      variables: { file: null },
    });
    const upload = new FormData();
    upload.append('operations', operations);
    upload.append('map', JSON.stringify({ 0: ['variables.file'] }));
    upload.append('0', new Blob([bytes], { type: 'application/pdf' }), 'lta.pdf');
    const answer = (await (await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'x-service-api-key': team.apiKey }, body: upload })).json()) as {
      data: { verifySealedPdf: Record<string, any> };
    };
    expect(answer.data.verifySealedPdf).toMatchObject({ valid: true, level: 'B_LTA', dss: { ocspResponses: 1 } });
    expect(answer.data.verifySealedPdf.timestamps.map((entry: { type: string }) => entry.type)).toEqual(['SIGNATURE', 'DOCUMENT']);

    // The DSS: the seal's certificate, the CA, and an OCSP response saying the seal is good.
    const certificates = dssItems(file, 'Certs').map((der) => pkijs.Certificate.fromBER(new Uint8Array(der)));
    const names = certificates.map((certificate) => (certificate.subject.typesAndValues[0]!.value.valueBlock as { value: string }).value);
    expect(names).toEqual(expect.arrayContaining(['Local Test Seal', 'Local Test CA', 'Local Test TSA']));
    const [ocsp] = dssItems(file, 'OCSPs');
    fs.writeFileSync(path.join(directory, 'ocsp.der'), ocsp!);
    const ocspText = execFileSync('openssl', ['ocsp', '-respin', path.join(directory, 'ocsp.der'), '-resp_text', '-noverify'], { encoding: 'utf8' });
    expect(ocspText).toMatch(/Response Status: successful/);
    expect(ocspText).toMatch(/Serial Number: 1001\s+Cert Status: good/);

    // The last revision is the document timestamp, over the whole file.
    const tail = bytes.toString('latin1', bytes.lastIndexOf('/DocTimeStamp') - 200);
    expect(tail).toContain('/SubFilter /ETSI.RFC3161');
    const report = pdfsig(file);
    const [seal, stamp] = report.split(/Signature #2:/);
    expect(seal).toContain('Signature Type: ETSI.CAdES.detached');
    expect(seal).toContain('Signature is Valid.');
    expect(stamp).toContain('Signature Field Name: DocumentTimestamp');
    expect(stamp).toContain('Total document signed');

    // poppler does not check RFC 3161 document timestamps: openssl does, over the bytes the /ByteRange covers, trusting the TSA.
    const [a, b, c, d] = /\/ByteRange \[(\d+) (\d+) (\d+) (\d+)\s*\]/.exec(tail)!.slice(1).map(Number) as [number, number, number, number];
    expect(c + d).toBe(bytes.length);
    fs.writeFileSync(path.join(directory, 'covered.bin'), Buffer.concat([bytes.subarray(a, a + b), bytes.subarray(c, c + d)]));
    fs.writeFileSync(path.join(directory, 'token.der'), cmsFromContents(bytes.toString('latin1', b + 1, c - 1)));
    const tsaCertificate = certificates.find((certificate) => (certificate.subject.typesAndValues[0]!.value.valueBlock as { value: string }).value === 'Local Test TSA')!;
    fs.writeFileSync(path.join(directory, 'tsa.pem'), `-----BEGIN CERTIFICATE-----\n${Buffer.from(tsaCertificate.toSchema().toBER(false)).toString('base64')}\n-----END CERTIFICATE-----\n`);
    const checked = execFileSync(
      'openssl',
      [
        'ts',
        '-verify',
        '-data',
        path.join(directory, 'covered.bin'),
        '-in',
        path.join(directory, 'token.der'),
        '-token_in',
        '-CAfile',
        path.join(directory, 'tsa.pem'),
        '-untrusted',
        path.join(directory, 'tsa.pem'),
      ],
      { encoding: 'utf8' },
    );
    expect(checked).toContain('Verification: OK');

    const { code, report: verified } = cliVerify(file);
    expect(code).toBe(0);
    expect(verified).toMatchObject({ valid: true, ours: true, envelopeId: built.envelopeId, level: 'B-LTA', dss: { ocspResponses: 1 } });
    expect(verified.timestamps.map((entry: { type: string; valid: boolean }) => [entry.type, entry.valid])).toEqual([
      ['signature', true],
      ['document', true],
    ]);
    expect(verified.signatures.map((signature: { type: string }) => signature.type)).toEqual(['signature', 'document-timestamp']);
  });

  it('a change after the seal stays invalid even under a fresh document timestamp', async () => {
    const { team, built } = await finalizedEnvelope(app);
    await sealWorkerFor(app, team.teamId).drain();
    const bytes = fs.readFileSync(await download(app, team.apiKey, built.envelopeId, built.documentId, 'lta-base.pdf'));
    const pdf = await openForUpdate(bytes);
    const page = pdf.getPage(0);
    page.drawText('Amount: 1,000,000', { x: 40, y: 40, size: 12 });
    const added = pdf.context
      .enumerateIndirectObjects()
      .map(([ref]) => ref)
      .filter((ref) => ref.objectNumber > pdf.context.largestObjectNumber - 3);
    const tampered = await appendDocumentTimestamp(appendUpdate(bytes, pdf, [page.ref, ...added]), tsa.url);
    const file = path.join(directory, 'tampered.pdf');
    fs.writeFileSync(file, tampered);
    const { code, report } = cliVerify(file);
    expect(code).toBe(2);
    expect(report.valid).toBe(false);
    expect(report.level).toBeNull();
    expect(report.problem).toMatch(/changed after the seal|added after the seal/);
  });

  it('without a TSA the seal stays B-B, and verify says so', async () => {
    const { team, built } = await finalizedEnvelope(plain);
    await sealWorkerFor(plain, team.teamId).drain();
    const file = await download(plain, team.apiKey, built.envelopeId, built.documentId, 'bb.pdf');
    expect(fs.readFileSync(file).includes('/DSS')).toBe(false);
    const { code, report } = cliVerify(file);
    expect(code).toBe(0);
    expect(report).toMatchObject({ valid: true, level: 'B-B', timestamps: [], dss: null });
  });

  it('an OCSP responder that is down fails the seal, the job retries, and once it answers the envelope is sealed B-LTA', async () => {
    const { team, built } = await finalizedEnvelope(app);
    await pki.stop();
    const clock = createClock();
    const row = async () =>
      (
        await app.orm.em
          .fork()
          .execute<{ attempts: number; processed_at: unknown; failed_at: unknown; last_error: string | null }[]>(
            `select attempts, processed_at, failed_at, last_error from outbox_message where dedupe_key = ?`,
            [`artefact.seal:${built.envelopeId}`],
          )
      )[0]!;
    try {
      expect(await sealWorkerFor(app, team.teamId, { clock }).drain()).toBe(1);
    } catch (error) {
      await pki.start();
      throw error;
    }
    expect(await row()).toMatchObject({ attempts: 1, processed_at: null, failed_at: null });
    expect((await row()).last_error).toMatch(/^revocation_unavailable: .*revocation data: no status for "Local Test Seal".*OCSP http:\/\/127\.0\.0\.1:\d+\/ocsp unreachable/);
    const [unsealed] = await app.orm.em.fork().execute<{ sealed_sha256: string | null }[]>(`select sealed_sha256 from document where id = ?`, [built.documentId]);
    expect(unsealed!.sealed_sha256).toBeNull();
    const busy = await restClient(app, team.apiKey).get(`/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`);
    await pki.start();
    expect(busy.status).toBe(503);
    expect(busy.body.error.name).toBe('Server.Busy');

    // The responder is back: the retry (due after its backoff) seals with the OCSP response.
    clock.advance(3600);
    expect(await sealWorkerFor(app, team.teamId, { clock }).drain()).toBe(1);
    // The whole row when it fails: the retry's own error says why (once seen in CI, not reproduced).
    expect(await row()).toMatchObject({ processed_at: expect.anything(), failed_at: null });
    const { report } = cliVerify(await download(app, team.apiKey, built.envelopeId, built.documentId, 'retried.pdf'));
    expect(report).toMatchObject({ valid: true, level: 'B-LTA', dss: { ocspResponses: 1 } });
  });
});
