import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSealCertificate, SealCertificateError } from '../src/domain/artefact/seal-certificate.ts';

/* The sealing certificate (contract §2): SEAL_P12 + SEAL_P12_PASSWORD, else one generated once under DATA_DIR. */

const run = promisify(execFile);
let directory: string;
beforeAll(() => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'seal-cert-'));
});
afterAll(() => fs.rmSync(directory, { recursive: true, force: true }));

/** A PKCS#12 file as an operator would bring it, valid between the two dates. */
function p12File(name: string, options: { notBefore: Date; notAfter: Date; password: string; commonName?: string }): string {
  const keys = forge.pki.rsa.generateKeyPair({ bits: 1024, e: 0x10001 });
  const certificate = forge.pki.createCertificate();
  certificate.publicKey = keys.publicKey;
  certificate.serialNumber = '0a';
  certificate.validity.notBefore = options.notBefore;
  certificate.validity.notAfter = options.notAfter;
  const subject = [{ name: 'commonName', value: options.commonName ?? 'Acme Seal' }];
  certificate.setSubject(subject);
  certificate.setIssuer(subject);
  certificate.sign(keys.privateKey, forge.md.sha256.create());
  const asn1 = forge.pkcs12.toPkcs12Asn1(keys.privateKey, [certificate], options.password, { algorithm: 'aes256' });
  const file = path.join(directory, name);
  fs.writeFileSync(file, Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary'));
  return file;
}

const day = 24 * 3600 * 1000;

describe('the seal certificate', () => {
  it('is read from SEAL_P12 with its password', () => {
    const file = p12File('good.p12', { notBefore: new Date(Date.now() - day), notAfter: new Date(Date.now() + 365 * day), password: 'pw' });
    const seal = loadSealCertificate({ sealP12Path: file, sealP12Password: 'pw', dataDir: directory });
    expect(seal.subject).toBe('CN=Acme Seal');
    expect(seal.selfSigned).toBe(false);
    expect(seal.certificates).toHaveLength(1);
  });

  it('refuses an expired, a not yet valid, a wrongly unlocked or a missing file with one line naming SEAL_P12', () => {
    const expired = p12File('expired.p12', { notBefore: new Date(Date.now() - 30 * day), notAfter: new Date(Date.now() - day), password: 'pw' });
    const future = p12File('future.p12', { notBefore: new Date(Date.now() + day), notAfter: new Date(Date.now() + 30 * day), password: 'pw' });
    const cases: [string | undefined, string, RegExp][] = [
      [expired, 'pw', /^SEAL_P12: the certificate expired on \d{4}-/],
      [future, 'pw', /^SEAL_P12: the certificate is not valid before /],
      [expired, 'wrong', /^SEAL_P12: not a PKCS#12 file this password opens/],
      [path.join(directory, 'absent.p12'), 'pw', /^SEAL_P12: cannot read .*ENOENT/],
    ];
    for (const [file, password, message] of cases) {
      let caught: unknown;
      try {
        loadSealCertificate({ sealP12Path: file, sealP12Password: password, dataDir: directory });
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(SealCertificateError);
      expect((caught as Error).message).toMatch(message);
      expect((caught as Error).message).not.toContain('\n');
    }
  });

  it('is generated once under DATA_DIR when SEAL_P12 is unset, and the same one is used afterwards', () => {
    const dataDir = path.join(directory, 'data');
    const first = loadSealCertificate({ sealP12Path: undefined, sealP12Password: undefined, dataDir });
    const second = loadSealCertificate({ sealP12Path: undefined, sealP12Password: undefined, dataDir });
    expect(first.selfSigned).toBe(true);
    expect(second.fingerprintSha256).toBe(first.fingerprintSha256);
    expect(fs.statSync(path.join(dataDir, 'seal', 'seal.pem')).mode & 0o777).toBe(0o600);
  });

  it('stops the server at start-up with that one line', async () => {
    const expired = p12File('expired-start.p12', { notBefore: new Date(Date.now() - 30 * day), notAfter: new Date(Date.now() - day), password: 'pw' });
    const failure = await run(process.execPath, ['src/main.ts'], {
      env: { ...process.env, SEAL_P12: expired, SEAL_P12_PASSWORD: 'pw', DATA_DIR: path.join(directory, 'server'), PORT: '0', LOG_LEVEL: 'silent' },
    }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure!.stderr.trim()).toMatch(/^SEAL_P12: the certificate expired on [^\n]+$/);
  });
});
