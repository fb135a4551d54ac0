/**
 * The offline verifier against packages it must not accept (issue 31, item 3): a package sealed
 * by another installation (a second seal, from a PKCS#12 file openssl makes here) is refused by
 * name and its sealing certificate reported; the installation's seal comes from the same
 * configuration the service reads (the generated one under DATA_DIR, or SEAL_P12), and
 * `--seal-cert` names another one to accept. Hostile ZIPs built here byte by byte: an entry
 * that inflates past the bound (whether its record declares its size or lies about it), a
 * second entry of one name, a local header naming another entry than its central record, and
 * entries sharing their bytes. Each is checked through the command line: its JSON and exit code.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32, createDeflateRaw, deflateRawSync } from 'node:zlib';
import * as pkijs from 'pkijs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readZip } from '../src/domain/artefact/evidence-check.ts';
import { loadSealCertificate } from '../src/domain/artefact/seal-certificate.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp, testSealCertificate, testSealDataDir } from './helpers/harness.ts';
import { buildEnvelope, signAndComplete, tokenFor } from './helpers/signing.ts';

let app: TestApp;
let foreignApp: TestApp;
let team: SeededTeam;
let foreignTeam: SeededTeam;
let directory: string;
let emptyDataDir: string;
const FOREIGN_P12_PASSWORD = 'other-installation';
const FOREIGN_SERIAL = '5eed0f0e1a2b3c4d';

beforeAll(async () => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'evidence-verifier-'));
  emptyDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evidence-verifier-empty-'));
  // Another installation's seal, as an operator would buy or make it: a PKCS#12 file.
  const key = path.join(directory, 'foreign-key.pem');
  const certificate = path.join(directory, 'foreign.pem');
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
      certificate,
      '-days',
      '30',
      '-subj',
      '/CN=Other Installation Seal/O=Elsewhere Ltd',
      '-set_serial',
      `0x${FOREIGN_SERIAL}`,
    ],
    { stdio: 'ignore' },
  );
  execFileSync('openssl', ['pkcs12', '-export', '-inkey', key, '-in', certificate, '-out', path.join(directory, 'foreign.p12'), '-passout', `pass:${FOREIGN_P12_PASSWORD}`], {
    stdio: 'ignore',
  });
  const foreignSeal = loadSealCertificate({ sealP12Path: path.join(directory, 'foreign.p12'), sealP12Password: FOREIGN_P12_PASSWORD, dataDir: directory });
  app = await startTestApp();
  foreignApp = await startTestApp({ seal: foreignSeal });
  team = await seedTeam(app);
  foreignTeam = await seedTeam(foreignApp);
});
afterAll(async () => {
  await app?.close();
  await foreignApp?.close();
  fs.rmSync(directory, { recursive: true, force: true });
  fs.rmSync(emptyDataDir, { recursive: true, force: true });
});

/** One signer, one signature, finalized; its evidence package. */
async function evidencePackage(on: TestApp, apiKey: string): Promise<Buffer> {
  const built = await buildEnvelope(on, apiKey, { recipients: [{ identifier: 'signer' }] });
  expect((await restClient(on, apiKey).put(`/envelopes/${built.envelopeId}/send`)).status).toBe(200);
  const signed = await signAndComplete(on, await tokenFor(on, built.envelopeId, built.recipients.signer!));
  expect(signed.errors, JSON.stringify(signed.errors)).toBeUndefined();
  const response = await fetch(`${on.url}/api/v1/key/envelopes/${built.envelopeId}/evidence`, { headers: { 'x-service-api-key': apiKey } });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

function save(bytes: Buffer, name: string): string {
  const file = path.join(directory, name);
  fs.writeFileSync(file, bytes);
  return file;
}

/** Preloaded into the command line: its peak resident memory, on standard error as it exits. */
const REPORT_PEAK_MEMORY = `data:text/javascript,process.on('exit', () => process.stderr.write('peak-rss-kb ' + process.resourceUsage().maxRSS + '\\n'))`;

/** The command line as an operator runs it, with only the given configuration. */
function verifyPackageCli(file: string, env: Record<string, string>, ...args: string[]) {
  const { SEAL_P12: _p12, SEAL_P12_PASSWORD: _password, DATA_DIR: _dataDir, ...inherited } = process.env;
  const run = spawnSync(process.execPath, ['--import', REPORT_PEAK_MEMORY, 'src/cli/main.ts', 'verify-package', file, ...args], { encoding: 'utf8', env: { ...inherited, ...env } });
  const peak = /peak-rss-kb (\d+)/.exec(run.stderr);
  return { status: run.status, report: run.stdout ? JSON.parse(run.stdout) : null, stderr: run.stderr, peakRssBytes: peak ? Number(peak[1]) * 1024 : undefined };
}

type RawEntry = {
  name: string;
  /** The bytes as stored in the file (already deflated when `method` is 8). */
  stored: Buffer;
  method: 0 | 8;
  crc: number;
  declaredSize: number;
  /** What the local header calls it (default: `name`). */
  localName?: string;
};

function entryOf(name: string, content: Buffer): RawEntry {
  return { name, stored: deflateRawSync(content), method: 8, crc: crc32(content) >>> 0, declaredSize: content.length };
}

/** A ZIP written byte by byte, so that it can say what no ZIP library would write. */
function writeZip(entries: RawEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const localName = Buffer.from(entry.localName ?? entry.name, 'utf8');
    const name = Buffer.from(entry.name, 'utf8');
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6);
    local.writeUInt16LE(entry.method, 8);
    local.writeUInt32LE(entry.crc, 14);
    local.writeUInt32LE(entry.stored.length, 18);
    local.writeUInt32LE(entry.declaredSize, 22);
    local.writeUInt16LE(localName.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(entry.method, 10);
    central.writeUInt32LE(entry.crc, 16);
    central.writeUInt32LE(entry.stored.length, 20);
    central.writeUInt32LE(entry.declaredSize, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, localName, entry.stored);
    centrals.push(central, name);
    offset += 30 + localName.length + entry.stored.length;
  }
  return finishZip(Buffer.concat(locals), Buffer.concat(centrals), entries.length);
}

function finishZip(body: Buffer, directoryBytes: Buffer, count: number): Buffer {
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(count, 8);
  end.writeUInt16LE(count, 10);
  end.writeUInt32LE(directoryBytes.length, 12);
  end.writeUInt32LE(body.length, 16);
  return Buffer.concat([body, directoryBytes, end]);
}

/** `megabytes` MiB of zeros, deflated as they are produced (never held whole). */
async function deflatedZeros(megabytes: number): Promise<{ stored: Buffer; crc: number }> {
  const deflate = createDeflateRaw({ level: 9 });
  const chunks: Buffer[] = [];
  deflate.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise((resolve) => deflate.on('end', resolve));
  const zeros = Buffer.alloc(1024 * 1024);
  let crc = 0;
  for (let index = 0; index < megabytes; index++) {
    crc = crc32(zeros, crc);
    if (!deflate.write(zeros)) await new Promise((resolve) => deflate.once('drain', resolve));
  }
  deflate.end();
  await ended;
  return { stored: Buffer.concat(chunks), crc: crc >>> 0 };
}

const ours = () => ({ DATA_DIR: testSealDataDir() });

describe('the offline verifier and whose seal a package carries', () => {
  it('reports the sealing certificate, accepts the installation’s own seal, and refuses another installation’s by name unless --seal-cert names it', async () => {
    const own = save(await evidencePackage(app, team.apiKey), 'own.zip');
    const seal = testSealCertificate();

    const accepted = verifyPackageCli(own, ours());
    expect(accepted.status, accepted.stderr).toBe(0);
    expect(accepted.report).toMatchObject({
      valid: true,
      failures: [],
      failureNames: [],
      seal: {
        subject: expect.stringContaining('CN=Envelope Service Seal (self-signed)'),
        issuer: expect.stringContaining('CN=Envelope Service Seal (self-signed)'),
        serialNumber: expect.stringMatching(/^[0-9a-f]+$/),
        fingerprintSha256: seal.fingerprintSha256,
        trusted: true,
        trustedAs: 'installation',
      },
    });

    // With no seal to compare with (a DATA_DIR without one, no SEAL_P12, no --seal-cert) nothing is "valid".
    const unknown = verifyPackageCli(own, { DATA_DIR: emptyDataDir });
    expect(unknown.status).toBe(2);
    expect(unknown.report).toMatchObject({
      valid: false,
      failures: ['manifest.json.p7s'],
      failureNames: ['EvidencePackage.NoSealToCompare'],
      seal: { fingerprintSha256: seal.fingerprintSha256, trusted: false },
    });
    // The verifier only reads: it made no seal there.
    expect(fs.existsSync(path.join(emptyDataDir, 'seal'))).toBe(false);
    const ownPem = save(
      Buffer.from(/-----BEGIN CERTIFICATE-----[^]*?-----END CERTIFICATE-----/.exec(fs.readFileSync(path.join(testSealDataDir(), 'seal', 'seal.pem'), 'utf8'))![0]),
      'own-seal.pem',
    );
    const named = verifyPackageCli(own, { DATA_DIR: emptyDataDir }, '--seal-cert', ownPem);
    expect(named.status, named.stderr).toBe(0);
    expect(named.report.seal).toMatchObject({ trusted: true, trustedAs: 'seal-cert' });

    // Another installation's package: every part intact, its signatures valid, and still refused.
    const foreign = save(await evidencePackage(foreignApp, foreignTeam.apiKey), 'foreign.zip');
    const refused = verifyPackageCli(foreign, ours());
    expect(refused.status).toBe(2);
    expect(refused.report).toMatchObject({
      valid: false,
      failures: ['manifest.json.p7s'],
      failureNames: ['EvidencePackage.ForeignSeal'],
      seal: { subject: 'CN=Other Installation Seal, O=Elsewhere Ltd', issuer: 'CN=Other Installation Seal, O=Elsewhere Ltd', serialNumber: FOREIGN_SERIAL, trusted: false, trustedAs: null },
    });
    const foreignFingerprint = execFileSync('openssl', ['x509', '-in', path.join(directory, 'foreign.pem'), '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' });
    expect(refused.report.seal.fingerprintSha256).toBe(foreignFingerprint.split('=')[1]!.trim().replaceAll(':', '').toLowerCase());
    expect(refused.report.parts.find((part: any) => part.path === 'manifest.json.p7s').problems).toEqual([
      { name: 'EvidencePackage.ForeignSeal', problem: expect.stringContaining('CN=Other Installation Seal') },
    ]);

    // The foreign manifest re-signed so that its signature file also carries this installation's
    // certificate: the seal reported (and judged) is the one the signature verifies under.
    const foreignEntries = readZip(fs.readFileSync(foreign)).entries;
    const manifestFile = save(foreignEntries.get('manifest.json')!, 'foreign-manifest.json');
    const resigned = path.join(directory, 'resigned.p7s');
    execFileSync(
      'openssl',
      [
        'cms',
        '-sign',
        '-binary',
        '-md',
        'sha256',
        '-in',
        manifestFile,
        '-signer',
        path.join(directory, 'foreign.pem'),
        '-inkey',
        path.join(directory, 'foreign-key.pem'),
        '-certfile',
        ownPem,
        '-outform',
        'DER',
        '-out',
        resigned,
      ],
      { stdio: 'ignore' },
    );
    // This installation's certificate first in the file (the certificate set is not signed, so the order is the sender's to choose).
    const signature = fs.readFileSync(resigned);
    const contentInfo = pkijs.ContentInfo.fromBER(signature.buffer.slice(signature.byteOffset, signature.byteOffset + signature.byteLength) as ArrayBuffer);
    const signedData = new pkijs.SignedData({ schema: contentInfo.content });
    const ownSha256 = testSealCertificate().fingerprintSha256;
    const isOwn = (certificate: unknown) =>
      createHash('sha256')
        .update(Buffer.from((certificate as pkijs.Certificate).toSchema().toBER(false)))
        .digest('hex') === ownSha256;
    signedData.certificates = [...signedData.certificates!].sort((a, b) => Number(isOwn(b)) - Number(isOwn(a)));
    expect(isOwn(signedData.certificates[0])).toBe(true);
    const reordered = new pkijs.ContentInfo({ contentType: contentInfo.contentType, content: signedData.toSchema(true) }).toSchema().toBER(false);
    foreignEntries.set('manifest.json.p7s', Buffer.from(reordered));
    const carryingOurs = verifyPackageCli(save(writeZip([...foreignEntries].map(([name, content]) => entryOf(name, content))), 'foreign-carrying-ours.zip'), ours());
    expect(carryingOurs.status).toBe(2);
    expect(carryingOurs.report.failureNames).toEqual(['EvidencePackage.ForeignSeal']);
    expect(carryingOurs.report.seal).toMatchObject({ serialNumber: FOREIGN_SERIAL, trusted: false });

    // Named with --seal-cert, or configured as the installation's seal (SEAL_P12), it is accepted.
    const vouched = verifyPackageCli(foreign, ours(), '--seal-cert', path.join(directory, 'foreign.pem'));
    expect(vouched.status, JSON.stringify(vouched.report)).toBe(0);
    expect(vouched.report.seal).toMatchObject({ trusted: true, trustedAs: 'seal-cert' });
    const configured = verifyPackageCli(foreign, { DATA_DIR: emptyDataDir, SEAL_P12: path.join(directory, 'foreign.p12'), SEAL_P12_PASSWORD: FOREIGN_P12_PASSWORD });
    expect(configured.status, JSON.stringify(configured.report)).toBe(0);
    expect(configured.report.seal).toMatchObject({ trusted: true, trustedAs: 'installation' });
    // ...and then our own package is the foreign one.
    expect(verifyPackageCli(own, { DATA_DIR: emptyDataDir, SEAL_P12: path.join(directory, 'foreign.p12'), SEAL_P12_PASSWORD: FOREIGN_P12_PASSWORD }).report.failureNames).toEqual([
      'EvidencePackage.ForeignSeal',
    ]);

    // A --seal-cert that is not a certificate is the operator's mistake: one line, exit 1.
    const notPem = verifyPackageCli(own, ours(), '--seal-cert', own);
    expect(notPem.status).toBe(1);
    expect(notPem.stderr).toContain('no PEM certificate');
  }, 240_000);
});

describe('hostile ZIPs', () => {
  let entries: Map<string, Buffer>;
  beforeAll(async () => {
    entries = readZip(await evidencePackage(app, team.apiKey)).entries;
  }, 240_000);

  const rawEntries = () => [...entries].map(([name, content]) => entryOf(name, content));

  it('the package rewritten byte by byte still verifies (the writer below is sound)', () => {
    const result = verifyPackageCli(save(writeZip(rawEntries()), 'rewritten.zip'), ours());
    expect(result.status, JSON.stringify(result.report)).toBe(0);
  });

  it('an entry that inflates past the bound is refused by name, whether its record declares its size or not, without being inflated whole', async () => {
    // The case: 1 GiB of zeros, about 1 MB deflated.
    const bomb = await deflatedZeros(1024);
    expect(bomb.stored.length).toBeLessThan(1.1 * 1024 * 1024);
    for (const declaredSize of [2 ** 32 - 1, 1000]) {
      const hostile = rawEntries().map((entry) => (entry.name === 'README.txt' ? { ...entry, stored: bomb.stored, crc: bomb.crc, declaredSize } : entry));
      const result = verifyPackageCli(save(writeZip(hostile), `bomb-${declaredSize}.zip`), ours());
      expect(result.status, result.stderr).toBe(2);
      expect(result.report.failures).toEqual(['README.txt']);
      expect(result.report.failureNames).toEqual(['EvidencePackage.EntryTooLarge']);
      // Inflating stopped at the bound (64 MiB): the whole entry (1 GiB) was never in memory.
      expect(result.peakRssBytes).toBeLessThan(768 * 1024 * 1024);
    }
  }, 180_000);

  it('a second entry of one name is refused by name (a reader taking the last one would see a forged manifest)', () => {
    const forged = Buffer.from(entries.get('manifest.json')!.toString('utf8').replace('"status":"finalized"', '"status":"voided"'));
    const result = verifyPackageCli(save(writeZip([...rawEntries(), entryOf('manifest.json', forged)]), 'duplicate.zip'), ours());
    expect(result.status).toBe(2);
    expect(result.report.failureNames).toEqual(['EvidencePackage.DuplicateEntry']);
    expect(result.report.failures).toEqual(['manifest.json']);
  });

  it('a local header that names another entry than the central directory does is refused by name', () => {
    const hostile = rawEntries().map((entry) => (entry.name === 'README.txt' ? { ...entry, localName: 'README.exe' } : entry));
    const result = verifyPackageCli(save(writeZip(hostile), 'mismatch.zip'), ours());
    expect(result.status).toBe(2);
    expect(result.report.failureNames).toEqual(['EvidencePackage.EntryNameMismatch']);
    expect(result.report.failures).toEqual(['README.txt']);
  });

  it('entries whose bytes overlap are refused by name', () => {
    // A stored entry "outer.bin" whose data is the whole local record of README.txt, which the
    // central directory also lists: two entries, one set of bytes.
    const readme = entryOf('README.txt', entries.get('README.txt')!);
    const innerName = Buffer.from(readme.name);
    const innerHeader = Buffer.alloc(30);
    innerHeader.writeUInt32LE(0x04034b50, 0);
    innerHeader.writeUInt16LE(20, 4);
    innerHeader.writeUInt16LE(8, 8);
    innerHeader.writeUInt32LE(readme.crc, 14);
    innerHeader.writeUInt32LE(readme.stored.length, 18);
    innerHeader.writeUInt32LE(readme.declaredSize, 22);
    innerHeader.writeUInt16LE(innerName.length, 26);
    const innerRecord = Buffer.concat([innerHeader, innerName, readme.stored]);
    const others = rawEntries().filter((entry) => entry.name !== 'README.txt');
    const outer: RawEntry = { name: 'outer.bin', stored: innerRecord, method: 0, crc: crc32(innerRecord) >>> 0, declaredSize: innerRecord.length };
    const zip = writeZip([...others, outer]);
    // Add README.txt's central record, pointing inside outer.bin's data.
    const end = zip.length - 22;
    const directoryOffset = zip.readUInt32LE(end + 16);
    const offsetOfOuter = others.reduce((sum, entry) => sum + 30 + Buffer.byteLength(entry.name) + entry.stored.length, 0);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(readme.crc, 16);
    central.writeUInt32LE(readme.stored.length, 20);
    central.writeUInt32LE(readme.declaredSize, 24);
    central.writeUInt16LE(innerName.length, 28);
    central.writeUInt32LE(offsetOfOuter + 30 + 'outer.bin'.length, 42);
    const hostile = finishZip(zip.subarray(0, directoryOffset), Buffer.concat([zip.subarray(directoryOffset, end), central, innerName]), others.length + 2);
    const result = verifyPackageCli(save(hostile, 'overlap.zip'), ours());
    expect(result.status).toBe(2);
    expect(result.report.failureNames).toContain('EvidencePackage.OverlappingEntry');
    expect(result.report.failures).toEqual(expect.arrayContaining(['outer.bin', 'README.txt']));
  });

  it('a file that is not a ZIP is refused by name', () => {
    const result = verifyPackageCli(save(Buffer.from('not a zip at all'), 'text.zip'), ours());
    expect(result.status).toBe(2);
    expect(result.report).toMatchObject({ valid: false, failures: ['(zip)'], failureNames: ['EvidencePackage.NotZip'] });
  });
});
