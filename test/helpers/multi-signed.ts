import { createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { previousSection, reserveExistingNumbers } from '../../src/domain/pdf/incremental.ts';
import { appendDocumentTimestamp, appendDss } from '../../src/domain/pdf/ltv.ts';
import { loadForRendering } from '../../src/domain/pdf/render.ts';
import { sealAsUpdate } from '../../src/domain/pdf/seal.ts';
import { createOpensslCa } from './openssl-ca.ts';

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
  const ca = createOpensslCa({ directory, subject: '/CN=Multi Signer Test CA' });
  const der = (pem: string) => Buffer.from(pem.replace(/-----[^-]+-----|\s+/g, ''), 'base64');
  const caPem = fs.readFileSync(ca.caCertPath, 'utf8');
  const caDer = der(caPem);
  const signerNames = Array.from({ length: options.count }, (_, index) => `Signer ${index + 1}`);
  // 1000, 1001…, in hex of even length as openssl ca's index wants it.
  const serials = signerNames.map((_, index) => (1000 + index).toString(16).padStart(4, '0'));
  const signers = signerNames.map((name, index) => {
    const { keyPath, certPath } = ca.issue({ name: `s${index}`, subject: `/CN=${name}/O=Example Customer`, serialHex: serials[index]!, days: 20, extensions: [] });
    return { keyPkcs8: new Uint8Array(createPrivateKey(fs.readFileSync(keyPath)).export({ type: 'pkcs8', format: 'der' })), certificate: der(fs.readFileSync(certPath, 'utf8')) };
  });
  for (const number of options.revoke ?? []) ca.revoke(serials[number - 1]!);
  const crlDer = der(fs.readFileSync(ca.writeCrl(), 'utf8'));

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
  return { bytes, caPem, signerNames, directory, signaturesStart };
}
