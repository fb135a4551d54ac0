import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { makeMultiSignedPdf } from './helpers/multi-signed.ts';
import { pdfsig } from './helpers/pdf-tools.ts';
import { startLocalTsa } from './helpers/tsa.ts';
import { graphqlVerify as graphqlVerifyAt, restVerify as restVerifyAt } from './helpers/verify-client.ts';

/*
 * POST /verify and GraphQL verifySealedPdf on any PDF (issue 35, part 2): every signature with its
 * signer, time, integrity, byte range, level, chain to TRUST_ANCHORS and revocation from the DSS.
 * The file: six people's signatures, each an incremental update, their certificates from a local
 * CA that revoked the third; a /DSS with the CA's CRL; the sixth timestamped, and document
 * timestamps after it.
 */

let tsa: Awaited<ReturnType<typeof startLocalTsa>>;
let app: TestApp;
let team: SeededTeam;
let fixture: Awaited<ReturnType<typeof makeMultiSignedPdf>>;
let directory: string;

beforeAll(async () => {
  tsa = await startLocalTsa();
  fixture = await makeMultiSignedPdf({ count: 6, revoke: [3], tsaUrl: tsa.url });
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'verify-signatures-'));
  const anchors = path.join(directory, 'anchors.pem');
  fs.writeFileSync(anchors, fixture.caPem);
  app = await startTestApp({ env: { TRUST_ANCHORS: anchors } });
  team = await seedTeam(app);
});
afterAll(async () => {
  await app?.close();
  await tsa?.close();
  fs.rmSync(directory, { recursive: true, force: true });
  fs.rmSync(fixture.directory, { recursive: true, force: true });
});

const restVerify = (bytes: Buffer) => restVerifyAt(app, team.apiKey, bytes);
const graphqlVerify = (bytes: Buffer, selection: string) => graphqlVerifyAt(app, team.apiKey, bytes, selection);

describe('POST /verify of a PDF signed by six people', () => {
  it('reports every signature: signer, issuer, serial, time, integrity, byte range, level, chain to the anchors, revocation from the DSS (REST)', async () => {
    const { status, body } = await restVerify(fixture.bytes);
    expect(status).toBe(200);
    const verification = body.payload.verification;
    expect(verification.valid).toBe(true);
    const signatures = verification.signatures as Record<string, any>[];
    const people = signatures.filter((signature) => signature.type === 'signature');
    expect(people.map((signature) => signature.signer.subject)).toEqual(fixture.signerNames.map((name) => `CN=${name}, O=Example Customer`));
    expect(signatures.slice(people.length).every((signature) => signature.type === 'document-timestamp')).toBe(true);
    for (const [index, signature] of people.entries()) {
      expect(signature).toMatchObject({ valid: true, coversWholeFile: false, chain: { status: 'trusted', anchor: 'CN=Multi Signer Test CA' } });
      expect(signature.signer).toMatchObject({ issuer: 'CN=Multi Signer Test CA', serialNumber: (1000 + index).toString(16).padStart(4, '0') });
      expect(signature.signingTime).toMatch(/^D:\d{14}/);
      // Each covers the file as it stood when it was signed: from the start, up to its own update's end.
      const [start, before, after, rest] = signature.byteRange;
      expect(start).toBe(0);
      expect(after).toBeGreaterThan(before);
      expect(after + rest).toBeLessThan(fixture.bytes.length);
    }
    // The third signer's certificate was revoked: the DSS's CRL says so; the others are good.
    expect(people.map((signature) => signature.revocation)).toEqual(people.map((_, index) => (index === 2 ? { status: 'revoked', source: 'crl' } : { status: 'good', source: 'crl' })));
    // Five without timestamps (B-B); the sixth timestamped, with the DSS and a document timestamp after it.
    expect(people.map((signature) => signature.level)).toEqual(['B-B', 'B-B', 'B-B', 'B-B', 'B-B', 'B-LTA']);
    expect(signatures.at(-1)).toMatchObject({ type: 'document-timestamp', valid: true, coversWholeFile: true, level: null });
    // The TSA is not among the anchors.
    expect(signatures.at(-1)!.chain.status).toBe('untrusted');
    expect(verification.level).toBe('B-LTA');

    // Poppler agrees on the signatures and their validity.
    const file = path.join(directory, 'six.pdf');
    fs.writeFileSync(file, fixture.bytes);
    const poppler = pdfsig(file);
    expect(poppler.match(/Signature is Valid\./g)).toHaveLength(6);
    for (const name of fixture.signerNames) expect(poppler).toContain(`Signer Certificate Common Name: ${name}`);
  });

  it('says the same through GraphQL verifySealedPdf', async () => {
    const answer = await graphqlVerify(
      fixture.bytes,
      'valid level signatures { type valid byteRange coversWholeFile level signerSubject signerIssuer signerSerialNumber chain { status anchor } revocation { status source } }',
    );
    expect(answer.errors).toBeUndefined();
    const people = (answer.data.verifySealedPdf.signatures as Record<string, any>[]).filter((signature) => signature.type === 'SIGNATURE');
    expect(people).toHaveLength(6);
    expect(people[2]).toMatchObject({
      signerSubject: 'CN=Signer 3, O=Example Customer',
      revocation: { status: 'REVOKED', source: 'CRL' },
      chain: { status: 'TRUSTED', anchor: 'CN=Multi Signer Test CA' },
      level: 'B_B',
    });
    expect(people[5]).toMatchObject({ level: 'B_LTA', signerSerialNumber: '03ed', coversWholeFile: false });
    expect(people[0].byteRange).toHaveLength(4);
    expect(answer.data.verifySealedPdf).toMatchObject({ valid: true, level: 'B_LTA' });
  });

  it('names the signature whose bytes were changed, and the chain of a signer the anchors do not know', async () => {
    // One byte of the original (inside every signature's first covered range), flipped.
    const changed = Buffer.from(fixture.bytes);
    const at = 300;
    expect(at).toBeLessThan(fixture.signaturesStart);
    changed[at] = changed[at]! ^ 0x01;
    const { body } = await restVerify(changed);
    const signatures = body.payload.verification.signatures as Record<string, any>[];
    expect(body.payload.verification.valid).toBe(false);
    // Every signature covers the original's bytes: each one now fails its integrity check.
    expect(signatures.filter((signature) => signature.type === 'signature').every((signature) => signature.valid === false && signature.level === null)).toBe(true);
    expect(signatures[0].problem).toMatch(/does not match the signed bytes|Message digest doesn't match/);

    // A file signed under another CA: its signer validates as a signature, but the anchors do not know its issuer.
    const foreign = await makeMultiSignedPdf({ count: 1 });
    try {
      const other = await restVerify(foreign.bytes);
      expect(other.body.payload.verification.signatures[0]).toMatchObject({ valid: true, chain: { status: 'untrusted' }, revocation: { status: 'good', source: 'crl' } });
      expect(other.body.payload.verification.signatures[0].chain.problem).toBeTruthy();
    } finally {
      fs.rmSync(foreign.directory, { recursive: true, force: true });
    }
  });

  it('refuses what is not a PDF by name on both faces', async () => {
    const notPdf = Buffer.from('this is a text file, not a PDF\n'.repeat(10));
    const rest = await restVerify(notPdf);
    expect(rest.status).toBe(415);
    expect(rest.body.error.name).toBe('Document.NotPdf');
    const answer = await graphqlVerify(notPdf, 'valid');
    expect(answer.errors[0].extensions.code).toBe('Document.NotPdf');
  });

  it('reads TRUST_ANCHORS at start-up and names it when it cannot', () => {
    expect(() => loadConfig({ TRUST_ANCHORS: path.join(directory, 'absent.pem') })).toThrow(/^Invalid configuration: TRUST_ANCHORS cannot be read \(ENOENT/);
    const empty = path.join(directory, 'empty.pem');
    fs.writeFileSync(empty, 'no certificates here\n');
    expect(() => loadConfig({ TRUST_ANCHORS: empty })).toThrow(/^Invalid configuration: TRUST_ANCHORS holds no PEM certificate/);
    expect(loadConfig({ TRUST_ANCHORS: path.join(directory, 'anchors.pem') }).trustAnchors).toHaveLength(1);
  });
});
