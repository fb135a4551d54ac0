/**
 * Signers' certificates named (issue 35): the level a certificate's QC statements claim
 * (describeCertificate), every signature's certificate in POST /verify and GraphQL verifySealedPdf,
 * and each signer's own signature on the certificate of completion (subject, issuer, serial,
 * level, trust service, whether it validates in the sealed file), in en-US and tr-TR. The
 * certificates come from the CSC v2 test provider: qualified ones carry QcCompliance, QcSSCD and
 * QcType esign; advanced ones no QC statements.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeCertificate } from '../src/domain/pdf/certificate-description.ts';
import { verifyPdf } from '../src/domain/pdf/verify.ts';
import { type CscTestProvider, startCscProvider } from './helpers/csc-provider.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { signWithProvider } from './helpers/signer-signed.ts';
import { buildEnvelope, signAndComplete, tokenFor } from './helpers/signing.ts';
import { graphqlVerify as graphqlVerifyAt, restVerify as restVerifyAt } from './helpers/verify-client.ts';

let provider: CscTestProvider;
let app: TestApp;
let team: SeededTeam;
let directory: string;
/** A file signed by Quinn (qualified) and then Ada (advanced), then sealed. */
let signed: { bytes: Buffer; certificates: Uint8Array[][] };

const quinn = { name: 'Quinn Qualified', email: 'quinn@example.com', pin: '1234' };
const ada = { name: 'Ada Advanced', email: 'ada@example.com', pin: '4321' };

beforeAll(async () => {
  provider = await startCscProvider();
  provider.addUser({ ...quinn, level: 'qualified' });
  provider.addUser({ ...ada, level: 'advanced' });
  signed = await signWithProvider(provider, { signers: [quinn, ada], seal: true });
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'signer-certificates-'));
  app = await startTestApp();
  team = await seedTeam(app);
});
afterAll(async () => {
  await app?.close();
  await provider?.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

describe('describeCertificate', () => {
  it('calls a certificate with QcCompliance and QcSSCD qualified, and one without QC statements advanced', () => {
    const [quinnChain, adaChain] = signed.certificates;
    const qualified = describeCertificate(quinnChain![0]!);
    const x509 = new X509Certificate(quinnChain![0]!);
    expect(qualified).toMatchObject({
      subject: 'CN=Quinn Qualified, emailAddress=quinn@example.com',
      issuer: expect.stringMatching(/^CN=/),
      serialNumber: x509.serialNumber.toLowerCase().padStart(2, '0'),
      notBefore: new Date(x509.validFrom).toISOString(),
      notAfter: new Date(x509.validTo).toISOString(),
      qcStatements: { compliance: true, sscd: true, types: ['esign'] },
      level: 'qualified',
      qualifiedCertificate: true,
    });
    expect(qualified.sha256).toMatch(/^[0-9a-f]{64}$/);
    const advanced = describeCertificate(adaChain![0]!);
    expect(advanced).toMatchObject({
      subject: 'CN=Ada Advanced, emailAddress=ada@example.com',
      qcStatements: { compliance: false, sscd: false, types: [] },
      level: 'advanced',
      qualifiedCertificate: false,
    });
    // The provider's CA certificate carries no QC statements either.
    expect(describeCertificate(quinnChain![1]!).level).toBe('advanced');
  });

  it('calls a qualified certificate whose key is not declared in a QSCD advanced, and says it is a qualified certificate', async () => {
    // A certificate with QcCompliance only (openssl, the statements as DER: SEQUENCE { SEQUENCE { OID 0.4.0.1862.1.1 } }).
    const key = path.join(directory, 'qc-only.key');
    const cert = path.join(directory, 'qc-only.crt');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '2',
        '-subj',
        '/CN=Compliance Only',
        '-addext',
        '1.3.6.1.5.5.7.1.3=DER:300a3008060604008e460101',
      ],
      {
        stdio: 'ignore',
      },
    );
    const description = describeCertificate(new X509Certificate(fs.readFileSync(cert)).raw);
    expect(description).toMatchObject({ qcStatements: { compliance: true, sscd: false, types: [] }, level: 'advanced', qualifiedCertificate: true });
  });

  it('refuses what is not a certificate', () => {
    expect(() => describeCertificate(Buffer.from('not a certificate'))).toThrow();
  });
});

const restVerify = (bytes: Buffer) => restVerifyAt(app, team.apiKey, bytes);
const graphqlVerify = (bytes: Buffer, selection: string) => graphqlVerifyAt(app, team.apiKey, bytes, selection);

describe('verify names each signer’s certificate and its level', () => {
  it('offline (verifyPdf): the qualified signer, the advanced one, then the seal, all valid', async () => {
    const report = await verifyPdf(signed.bytes, { ourCertificateSha256: [] });
    expect(report.valid).toBe(true);
    expect(report.signatures.map((signature) => [signature.signer?.subject, signature.signer?.level, signature.valid])).toEqual([
      ['CN=Quinn Qualified, emailAddress=quinn@example.com', 'qualified', true],
      ['CN=Ada Advanced, emailAddress=ada@example.com', 'advanced', true],
      ['CN=Envelope service seal', 'advanced', true],
    ]);
  });

  it('through REST POST /verify: signer.level, signer.qcStatements, signer.qualifiedCertificate', async () => {
    const { status, body } = await restVerify(signed.bytes);
    expect(status).toBe(200);
    const [first, second] = body.payload.verification.signatures as Record<string, any>[];
    const quinnCertificate = describeCertificate(signed.certificates[0]![0]!);
    expect(first).toMatchObject({
      valid: true,
      signer: {
        subject: 'CN=Quinn Qualified, emailAddress=quinn@example.com',
        issuer: quinnCertificate.issuer,
        serialNumber: quinnCertificate.serialNumber,
        level: 'qualified',
        qualifiedCertificate: true,
        qcStatements: { compliance: true, sscd: true, types: ['esign'] },
      },
    });
    expect(second).toMatchObject({
      valid: true,
      signer: { subject: 'CN=Ada Advanced, emailAddress=ada@example.com', level: 'advanced', qcStatements: { compliance: false, sscd: false, types: [] } },
    });
  });

  it('through GraphQL verifySealedPdf: signerCertificate with its level', async () => {
    const answer = await graphqlVerify(
      signed.bytes,
      'valid signatures { valid signerSubject signerCertificate { subject issuer serialNumber notBefore notAfter sha256 level qualifiedCertificate qcStatements { compliance sscd types } } }',
    );
    expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
    const signatures = answer.data.verifySealedPdf.signatures as Record<string, any>[];
    const quinnCertificate = describeCertificate(signed.certificates[0]![0]!);
    expect(signatures[0]).toMatchObject({
      valid: true,
      signerSubject: 'CN=Quinn Qualified, emailAddress=quinn@example.com',
      signerCertificate: {
        subject: 'CN=Quinn Qualified, emailAddress=quinn@example.com',
        issuer: quinnCertificate.issuer,
        serialNumber: quinnCertificate.serialNumber,
        sha256: quinnCertificate.sha256,
        level: 'QUALIFIED',
        qualifiedCertificate: true,
        qcStatements: { compliance: true, sscd: true, types: ['ESIGN'] },
      },
    });
    expect(signatures[1].signerCertificate).toMatchObject({ subject: 'CN=Ada Advanced, emailAddress=ada@example.com', level: 'ADVANCED', qualifiedCertificate: false });
  });
});

/** A finalized envelope with one signer (a simple signature through the signing page). */
async function finalizedEnvelope(signerName: string) {
  const built = await buildEnvelope(app, team.apiKey, {
    name: 'Trusted contract',
    recipients: [{ identifier: 'signer', agents: [{ info: { name: signerName, email: `${randomUUID()}@example.com` } }] }],
  });
  expect((await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  const done = await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.signer!));
  expect(done.errors, JSON.stringify(done.errors)).toBeUndefined();
  return built;
}

/** The signer's own signature recorded as the signing round trip records it once embedded (a signed signer_signature row). */
async function recordSignerSignature(envelopeId: string, recipientId: string, options: { level: 'advanced' | 'qualified'; certificates: Uint8Array[]; trustServiceId: string }) {
  const [agent] = await app.orm.em.fork().execute<{ id: string }[]>('select id from agent where recipient_id = ?', [recipientId]);
  await app.orm.em.fork().execute(
    `insert into signer_signature (id, created_at, updated_at, envelope_id, recipient_id, agent_id, token_id, person_index, level, trust_service_id, status, certificates, signed_at)
     values (?, now(), now(), ?, ?, ?, ?, 0, ?, ?, 'signed', ?::jsonb, now())`,
    [
      randomUUID(),
      envelopeId,
      recipientId,
      agent!.id,
      randomUUID(),
      options.level,
      options.trustServiceId,
      JSON.stringify(options.certificates.map((der) => Buffer.from(der).toString('base64'))),
    ],
  );
}

async function certificateText(envelopeId: string, query: string): Promise<string> {
  const response = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/audit/pdf${query}`, { headers: { 'x-service-api-key': team.apiKey } });
  expect(response.status).toBe(200);
  const file = path.join(directory, `${randomUUID()}.pdf`);
  fs.writeFileSync(file, Buffer.from(await response.arrayBuffer()));
  // One line per text line, runs of spaces as one: wrapped lines stay searchable by their words.
  return execFileSync('pdftotext', ['-enc', 'UTF-8', file, '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
}

describe('the certificate of completion names each signer’s certificate', () => {
  it('a qualified signer whose signature the sealed document carries: subject, issuer, serial, level, trust service, validates (en-US and tr-TR)', async () => {
    const built = await finalizedEnvelope(quinn.name);
    const rest = restClient(app, team.apiKey);
    expect(
      (
        await rest.patch('/team/settings', {
          trustServices: [{ id: 'qtsp', name: 'Test QTSP', baseUrl: provider.baseUrl, clientId: 'c', clientSecret: 's', levels: ['advanced', 'qualified'] }],
        })
      ).status,
    ).toBe(200);
    // The sealed document as the round trip will leave it: the signer's own PAdES signature in it
    // (here over the service's sealed file, as an update), stored and recorded as the sealed file.
    const [document] = await app.orm.em.fork().execute<{ id: string; sealed_sha256: string | null }[]>('select id, sealed_sha256 from document where envelope_id = ?', [built.envelopeId]);
    const original = await app.dependencies.blobStore.localCopy(
      (await app.orm.em.fork().execute<{ content_sha256: string }[]>('select content_sha256 from document where id = ?', [document!.id]))[0]!.content_sha256,
    );
    const withSignature = await signWithProvider(provider, { signers: [quinn], pdf: fs.readFileSync(original.path), seal: true });
    original.release();
    const stored = await (await app.dependencies.blobStore.stage(Readable.from(withSignature.bytes))).commit();
    await app.orm.em.fork().execute('update document set sealed_sha256 = ? where id = ?', [stored.sha256, document!.id]);
    await recordSignerSignature(built.envelopeId, built.recipients.signer!, { level: 'qualified', certificates: withSignature.certificates[0]!, trustServiceId: 'qtsp' });
    const certificate = describeCertificate(withSignature.certificates[0]![0]!);

    const english = await certificateText(built.envelopeId, '?current=true');
    expect(english).toContain('Own qualified electronic signature at a trust service');
    expect(english).toContain('Trust service: Test QTSP (qtsp)');
    expect(english).toContain(`Certificate subject: ${certificate.subject}`);
    expect(english).toContain(`Certificate issuer: ${certificate.issuer}`);
    expect(english).toContain(`Certificate serial number: ${certificate.serialNumber}`);
    expect(english).toContain('Level by the certificate’s QC statements: qualified (qualified certificate, key in a qualified signature creation device)');
    expect(english).toContain('Validates: yes: the signature verifies in the sealed document');

    const turkish = await certificateText(built.envelopeId, '?current=true&locale=tr-TR');
    expect(turkish).toContain('Güven hizmeti sağlayıcısında kendi nitelikli elektronik imzası');
    expect(turkish).toContain(`Sertifika sahibi: ${certificate.subject}`);
    expect(turkish).toContain(`Sertifikayı veren: ${certificate.issuer}`);
    expect(turkish).toContain(`Sertifika seri numarası: ${certificate.serialNumber}`);
    expect(turkish).toContain('nitelikli (nitelikli sertifika, anahtar nitelikli imza oluşturma cihazında)');
    expect(turkish).toContain('Doğrulama: geçerli');
  });

  it('an advanced signer whose signature the sealed document does not carry: named, level advanced, does not validate (the fixed certificate)', async () => {
    const built = await finalizedEnvelope(ada.name);
    const adaChain = signed.certificates[1]!;
    await recordSignerSignature(built.envelopeId, built.recipients.signer!, { level: 'advanced', certificates: adaChain, trustServiceId: 'gone' });
    const certificate = describeCertificate(adaChain[0]!);
    // The fixed certificate: the documents are sealed by the service first (without Ada's signature).
    const english = await certificateText(built.envelopeId, '');
    expect(english).toContain('Own advanced electronic signature at a trust service');
    expect(english).toContain('Trust service: gone');
    expect(english).toContain(`Certificate subject: ${certificate.subject}`);
    expect(english).toContain(`Certificate serial number: ${certificate.serialNumber}`);
    expect(english).toContain('Level by the certificate’s QC statements: advanced (not a qualified certificate)');
    expect(english).toContain('Validates: no: no sealed document carries a signature by this certificate');
  });

  it('says nothing of trust services for a simple signer', async () => {
    const built = await finalizedEnvelope('Sam Simple');
    const english = await certificateText(built.envelopeId, '?current=true');
    expect(english).toContain('Sam Simple');
    expect(english).not.toContain('trust service');
  });
});
