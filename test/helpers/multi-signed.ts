import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { previousSection, reserveExistingNumbers } from '../../src/domain/pdf/incremental.ts';
import { appendDocumentTimestamp, appendDss } from '../../src/domain/pdf/ltv.ts';
import { loadForRendering } from '../../src/domain/pdf/render.ts';
import { sealAsUpdate } from '../../src/domain/pdf/seal.ts';

/**
 * A PDF signed `count` times by different people, each an incremental update, as a document
 * passed from signer to signer is (the bench and test/verify-signatures.test.ts): a local CA
 * (openssl) issues every signer's certificate; `revoke` names signers (1-based) the CA revoked;
 * then a /DSS with the CA's certificate and its CRL; with `tsaUrl`, the last signature carries a
 * signature timestamp and a document timestamp closes the file (B-LTA for it).
 */
export async function makeMultiSignedPdf(options: {
  count: number;
  revoke?: number[];
  tsaUrl?: string;
}): Promise<{ bytes: Buffer<ArrayBufferLike>; caPem: string; signerNames: string[]; directory: string; signaturesStart: number }> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'multi-signed-'));
  const file = (name: string) => path.join(directory, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: directory, stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '30',
    '-subj',
    '/CN=Multi Signer Test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  fs.writeFileSync(file('index.txt'), '');
  fs.writeFileSync(file('crlnumber'), '01\n');
  fs.writeFileSync(
    file('ca.cnf'),
    [
      '[ ca ]',
      'default_ca = local',
      '[ local ]',
      `database = ${file('index.txt')}`,
      `crlnumber = ${file('crlnumber')}`,
      'default_md = sha256',
      'default_crl_days = 7',
      `certificate = ${file('ca.pem')}`,
      `private_key = ${file('ca.key')}`,
    ].join('\n'),
  );
  const der = (pem: string) => Buffer.from(pem.replace(/-----[^-]+-----|\s+/g, ''), 'base64');
  const caDer = der(fs.readFileSync(file('ca.pem'), 'utf8'));
  const signerNames = Array.from({ length: options.count }, (_, index) => `Signer ${index + 1}`);
  const signers = signerNames.map((name, index) => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    fs.writeFileSync(file(`s${index}.key`), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    openssl('req', '-new', '-key', file(`s${index}.key`), '-out', file(`s${index}.csr`), '-subj', `/CN=${name}/O=Example Customer`);
    openssl('x509', '-req', '-in', file(`s${index}.csr`), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-set_serial', String(1000 + index), '-days', '20', '-out', file(`s${index}.pem`));
    return { keyPkcs8: new Uint8Array(privateKey.export({ type: 'pkcs8', format: 'der' })), certificate: der(fs.readFileSync(file(`s${index}.pem`), 'utf8')) };
  });
  for (const number of options.revoke ?? []) openssl('ca', '-config', file('ca.cnf'), '-revoke', file(`s${number - 1}.pem`));
  openssl('ca', '-config', file('ca.cnf'), '-gencrl', '-out', file('ca.crl.pem'));
  const crlDer = der(fs.readFileSync(file('ca.crl.pem'), 'utf8'));

  const original = await PDFDocument.create();
  const font = await original.embedFont(StandardFonts.Helvetica);
  for (let page = 0; page < 3; page++) original.addPage([595, 842]).drawText(`Agreement, page ${page + 1}`, { x: 72, y: 760, size: 14, font });
  let bytes: Buffer = Buffer.from(await original.save({ useObjectStreams: false }));
  /** Where the original ends: every signature covers the bytes before it. */
  const signaturesStart = bytes.length;
  for (const [index, signer] of signers.entries()) {
    const pdf = await loadForRendering(bytes);
    const previous = previousSection(bytes);
    if (previous !== undefined) reserveExistingNumbers(pdf, previous);
    const since = pdf.context.largestObjectNumber;
    const last = index === signers.length - 1;
    bytes = await sealAsUpdate(
      bytes,
      pdf,
      { changed: [], since },
      {
        material: { keyPkcs8: signer.keyPkcs8, certificates: [signer.certificate, caDer] },
        // Only the last with a timestamp: sealAsUpdate then adds the DSS and the document timestamp itself.
        info: { reason: `Signed by ${signerNames[index]}`, name: signerNames[index]!, signingTime: new Date(), tsaUrl: last ? options.tsaUrl : undefined },
      },
    );
  }
  // The CA's CRL (and certificate) in a /DSS of its own, then a document timestamp over it all.
  bytes = await appendDss(bytes, { certificates: [caDer], ocspResponses: [], crls: [crlDer] });
  if (options.tsaUrl !== undefined) bytes = await appendDocumentTimestamp(bytes, options.tsaUrl);
  return { bytes, caPem: fs.readFileSync(file('ca.pem'), 'utf8'), signerNames, directory, signaturesStart };
}
