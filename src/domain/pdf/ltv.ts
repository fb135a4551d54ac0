/**
 * Long-term validation (PAdES baseline B-LT and B-LTA, ETSI EN 319 142-1 §5.4, §5.5): after the
 * seal, an incremental update adds the document security store (/DSS: the certificates and their
 * revocation data, OCSP responses or CRLs, fetched now from the sources each certificate names),
 * and a further one a document timestamp (/Type /DocTimeStamp, /SubFilter /ETSI.RFC3161) over the
 * whole file, DSS included. A source that names itself and cannot answer fails the seal
 * (RevocationError) and the job retries: the seal never goes out without the data it should carry.
 * Runs in a PDF worker thread: Node built-ins and the libraries only.
 */
import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import { PDFArray, PDFDict, type PDFDocument, PDFName, PDFNumber, PDFRef, PDFString } from 'pdf-lib';
import * as pkijs from 'pkijs';
import { appendUpdate, openForUpdate } from './incremental.ts';
import { requestTimestamp, toArrayBuffer } from './timestamp.ts';

const oids = {
  authorityInfoAccess: '1.3.6.1.5.5.7.1.1',
  ocsp: '1.3.6.1.5.5.7.48.1',
  crlDistributionPoints: '2.5.29.31',
};

/** Revocation data for a certificate cannot be had now: the seal fails (and the job retries), it never goes out without it. */
export class RevocationError extends Error {
  /** Crosses the worker thread boundary (an Error's class does not): the job's failure reason `revocation_unavailable`. */
  readonly code = 'REVOCATION_UNAVAILABLE';
  /** The status was had, and it says revoked (not a source that failed). */
  readonly revoked: boolean;

  constructor(message: string, options: { revoked?: boolean } = {}) {
    super(`revocation data: ${message}`);
    this.name = 'RevocationError';
    this.revoked = options.revoked ?? false;
  }
}

/** What goes into the DSS, each item as DER. */
export type ValidationData = { certificates: Uint8Array[]; ocspResponses: Uint8Array[]; crls: Uint8Array[] };

export function parseCertificate(der: Uint8Array): pkijs.Certificate {
  return pkijs.Certificate.fromBER(toArrayBuffer(der));
}

export function derOf(certificate: pkijs.Certificate): Buffer {
  return Buffer.from(certificate.toSchema().toBER(false));
}

export function isSelfIssued(certificate: pkijs.Certificate): boolean {
  return certificate.issuer.isEqual(certificate.subject);
}

/** The certificate among `pool` that issued `certificate` (its subject is the issuer and its key checks the signature). */
export async function issuerOf(certificate: pkijs.Certificate, pool: pkijs.Certificate[]): Promise<pkijs.Certificate | undefined> {
  for (const candidate of pool) {
    if (candidate === certificate || !candidate.subject.isEqual(certificate.issuer)) continue;
    try {
      if (await certificate.verify(candidate)) return candidate;
    } catch {
      // Not this one.
    }
  }
  return undefined;
}

function uriOf(name: pkijs.GeneralName): string | undefined {
  return name.type === 6 && typeof name.value === 'string' && /^https?:\/\//i.test(name.value) ? name.value : undefined;
}

/** The revocation sources a certificate names: OCSP responders (AIA) and CRL distribution points, http(s) only. */
export function revocationSourcesOf(certificate: pkijs.Certificate): { ocsp: string[]; crl: string[] } {
  const ocsp: string[] = [];
  const crl: string[] = [];
  for (const extension of certificate.extensions ?? []) {
    if (extension.extnID === oids.authorityInfoAccess && extension.parsedValue instanceof pkijs.InfoAccess) {
      for (const description of extension.parsedValue.accessDescriptions) {
        const uri = description.accessMethod === oids.ocsp ? uriOf(description.accessLocation) : undefined;
        if (uri !== undefined) ocsp.push(uri);
      }
    }
    if (extension.extnID === oids.crlDistributionPoints && extension.parsedValue instanceof pkijs.CRLDistributionPoints) {
      for (const point of extension.parsedValue.distributionPoints) {
        const names = Array.isArray(point.distributionPoint) ? point.distributionPoint : [];
        for (const name of names) {
          const uri = uriOf(name);
          if (uri !== undefined) crl.push(uri);
        }
      }
    }
  }
  return { ocsp, crl };
}

function describe(certificate: pkijs.Certificate): string {
  const cn = certificate.subject.typesAndValues.find((entry) => entry.type === '2.5.4.3');
  return `"${(cn?.value.valueBlock as { value?: string } | undefined)?.value ?? 'certificate'}" (serial ${Buffer.from(certificate.serialNumber.valueBlock.valueHexView).toString('hex')})`;
}

async function fetchBytes(url: string, init: RequestInit): Promise<ArrayBuffer> {
  const ask = () => fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  let response: Response;
  try {
    response = await ask().catch((error: unknown) => {
      // A revocation query changes nothing at the responder, so a failure to reach it is asked
      // again once at once (not a timeout): a kept-alive connection the responder has closed
      // fails the first ask without reaching it, and fetch does not resend a POST by itself.
      if ((error as Error).name === 'TimeoutError') throw error;
      return ask();
    });
  } catch (error) {
    throw new Error(`${url} unreachable (${(error as Error).message})`);
  }
  if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}`);
  return response.arrayBuffer();
}

/** An OCSP response (DER of the whole OCSPResponse) saying `certificate` is good, checked against `issuer`, and the certificates it carries. */
async function ocspResponseFor(url: string, certificate: pkijs.Certificate, issuer: pkijs.Certificate): Promise<{ response: Uint8Array; certificates: pkijs.Certificate[] }> {
  const request = new pkijs.OCSPRequest();
  await request.createForCertificate(certificate, { hashAlgorithm: 'SHA-1', issuerCertificate: issuer });
  const body = await fetchBytes(url, { method: 'POST', headers: { 'content-type': 'application/ocsp-request' }, body: Buffer.from(request.toSchema(true).toBER(false)) });
  let basic: pkijs.BasicOCSPResponse;
  try {
    const parsed = pkijs.OCSPResponse.fromBER(body);
    const status = parsed.responseStatus.valueBlock.valueDec;
    if (status !== 0) throw new Error(`the responder refused (OCSP status ${status})`);
    if (parsed.responseBytes === undefined) throw new Error('the response is empty');
    basic = pkijs.BasicOCSPResponse.fromBER(toArrayBuffer(parsed.responseBytes.response.valueBlock.valueHexView));
  } catch (error) {
    throw new Error(`${url}: ${(error as Error).message}`);
  }
  const status = await basic.getCertificateStatus(certificate, issuer);
  if (!status.isForCertificate) throw new Error(`${url}: the response is about another certificate`);
  if (status.status === 1) throw new RevocationError(`${describe(certificate)} is revoked (${url})`, { revoked: true });
  if (status.status !== 0) throw new Error(`${url}: the responder does not know the certificate`);
  let signed = false;
  try {
    signed = await basic.verify({ trustedCerts: [issuer] });
  } catch {
    signed = false;
  }
  if (!signed) throw new Error(`${url}: the response is not signed by the certificate's issuer or a responder it authorised`);
  return { response: new Uint8Array(body), certificates: basic.certs ?? [] };
}

/** A CRL (DER) signed by `issuer` that does not list `certificate`. */
async function crlFor(url: string, certificate: pkijs.Certificate, issuer: pkijs.Certificate): Promise<Uint8Array> {
  const body = await fetchBytes(url, { method: 'GET' });
  let crl: pkijs.CertificateRevocationList;
  try {
    crl = pkijs.CertificateRevocationList.fromBER(body);
  } catch (error) {
    throw new Error(`${url}: not a CRL (${(error as Error).message})`);
  }
  let signed = false;
  try {
    signed = await crl.verify({ issuerCertificate: issuer });
  } catch {
    signed = false;
  }
  if (!signed) throw new Error(`${url}: the CRL is not signed by the certificate's issuer`);
  if (crl.isCertificateRevoked(certificate)) throw new RevocationError(`${describe(certificate)} is revoked (${url})`, { revoked: true });
  return new Uint8Array(body);
}

/**
 * The DSS content for a seal: its certificates, the timestamp authority's, and revocation data for
 * each certificate that is not self-issued and names a source (OCSP first, then CRLs). A
 * certificate of the seal whose issuer is missing while it names sources fails (the chain belongs
 * in SEAL_P12); one naming no source at all gets none (verify then reports B-T, not B-LT).
 */
export async function gatherValidationData(sealCertificates: Uint8Array[], timestampCertificates: Uint8Array[]): Promise<ValidationData> {
  const seal = sealCertificates.map(parseCertificate);
  const stamp = timestampCertificates.map(parseCertificate);
  const certificates = [...seal, ...stamp];
  const ocspResponses: Uint8Array[] = [];
  const crls: Uint8Array[] = [];
  const done = new Set<string>();
  const fingerprint = (certificate: pkijs.Certificate) => createHash('sha256').update(derOf(certificate)).digest('hex');
  for (const certificate of [...seal, ...stamp]) {
    const id = fingerprint(certificate);
    if (done.has(id) || isSelfIssued(certificate)) continue;
    done.add(id);
    const sources = revocationSourcesOf(certificate);
    if (sources.ocsp.length === 0 && sources.crl.length === 0) continue;
    const issuer = await issuerOf(certificate, [...seal, ...stamp]);
    if (issuer === undefined) {
      // A timestamp authority's chain is what its token carries; the seal's is ours to complete.
      if (!seal.includes(certificate)) continue;
      throw new RevocationError(`the issuer of ${describe(certificate)} is not among the seal's certificates (SEAL_P12 must carry the chain)`);
    }
    const failures: string[] = [];
    let found = false;
    for (const url of sources.ocsp) {
      try {
        const answer = await ocspResponseFor(url, certificate, issuer);
        ocspResponses.push(answer.response);
        certificates.push(...answer.certificates);
        found = true;
        break;
      } catch (error) {
        if (error instanceof RevocationError) throw error;
        failures.push(`OCSP ${(error as Error).message}`);
      }
    }
    for (const url of found ? [] : sources.crl) {
      try {
        crls.push(await crlFor(url, certificate, issuer));
        found = true;
        break;
      } catch (error) {
        if (error instanceof RevocationError) throw error;
        failures.push(`CRL ${(error as Error).message}`);
      }
    }
    if (!found) throw new RevocationError(`no status for ${describe(certificate)}: ${failures.join('; ')}`);
  }
  const unique = new Map<string, Uint8Array>();
  for (const certificate of certificates) unique.set(fingerprint(certificate), derOf(certificate));
  return { certificates: [...unique.values()], ocspResponses, crls };
}

/** `file` with an update adding the /DSS to its catalog. */
export async function appendDss(file: Buffer, data: ValidationData): Promise<Buffer> {
  const pdf = await openForUpdate(file);
  const context = pdf.context;
  const written: PDFRef[] = [];
  const streams = (items: Uint8Array[]) => {
    const array = PDFArray.withContext(context);
    for (const item of items) {
      const ref = context.register(context.flateStream(item));
      written.push(ref);
      array.push(ref);
    }
    return array;
  };
  const dss = PDFDict.withContext(context);
  dss.set(PDFName.of('Type'), PDFName.of('DSS'));
  dss.set(PDFName.of('Certs'), streams(data.certificates));
  if (data.ocspResponses.length > 0) dss.set(PDFName.of('OCSPs'), streams(data.ocspResponses));
  if (data.crls.length > 0) dss.set(PDFName.of('CRLs'), streams(data.crls));
  const dssRef = context.register(dss);
  pdf.catalog.set(PDFName.of('DSS'), dssRef);
  return appendUpdate(file, pdf, [...written, dssRef, context.trailerInfo.Root as PDFRef]);
}

/** Adds `widget` to the AcroForm's /Fields (creating the AcroForm if there is none); answers the objects changed. */
function addToFields(pdf: PDFDocument, widget: PDFRef): PDFRef[] {
  const context = pdf.context;
  const root = context.trailerInfo.Root as PDFRef;
  const entry = pdf.catalog.get(PDFName.of('AcroForm'));
  if (entry === undefined) {
    const acroForm = context.obj({ Fields: [widget], SigFlags: 3 });
    const ref = context.register(acroForm);
    pdf.catalog.set(PDFName.of('AcroForm'), ref);
    return [ref, root];
  }
  const holder = entry instanceof PDFRef ? entry : root;
  const acroForm = context.lookup(entry, PDFDict);
  acroForm.set(PDFName.of('SigFlags'), PDFNumber.of(3));
  const fields = acroForm.get(PDFName.of('Fields'));
  if (fields instanceof PDFRef) {
    context.lookup(fields, PDFArray).push(widget);
    return [fields, holder];
  }
  if (fields instanceof PDFArray) fields.push(widget);
  else acroForm.set(PDFName.of('Fields'), context.obj([widget]));
  return [holder];
}

/** Room for the document timestamp token (the TSA's certificates included), in bytes. */
const TOKEN_ROOM = 16_384;

/** `file` with an update adding a document timestamp from `tsaUrl` over the whole of it. */
export async function appendDocumentTimestamp(file: Buffer, tsaUrl: string): Promise<Buffer> {
  const pdf = await openForUpdate(file);
  const context = pdf.context;
  const signatureRef = context.nextRef();
  const byteRangePlaceholder = `[0 ${'*'.repeat(10)} ${'*'.repeat(10)} ${'*'.repeat(10)}]`;
  const signature = Buffer.from(
    `<<\n/Type /DocTimeStamp\n/Filter /Adobe.PPKLite\n/SubFilter /ETSI.RFC3161\n/ByteRange ${byteRangePlaceholder}\n/Contents <${'0'.repeat(2 * TOKEN_ROOM)}>\n>>`,
    'latin1',
  );
  const widget = context.register(
    context.obj({ Type: 'Annot', Subtype: 'Widget', FT: 'Sig', Rect: [0, 0, 0, 0], V: signatureRef, T: PDFString.of('DocumentTimestamp'), F: 132, P: pdf.getPage(0).ref }),
  );
  const changed = addToFields(pdf, widget);
  const updated = appendUpdate(file, pdf, [widget, ...changed], [{ ref: signatureRef, bytes: signature }]);
  const rangeAt = updated.indexOf(byteRangePlaceholder, file.length, 'latin1');
  const contentsStart = updated.indexOf('<', updated.indexOf('/Contents', rangeAt, 'latin1'), 'latin1');
  const contentsEnd = contentsStart + 2 * TOKEN_ROOM + 2;
  const range = `[0 ${contentsStart} ${contentsEnd} ${updated.length - contentsEnd}]`;
  updated.write(range.padEnd(byteRangePlaceholder.length, ' '), rangeAt, 'latin1');
  const digest = createHash('sha256').update(updated.subarray(0, contentsStart)).update(updated.subarray(contentsEnd)).digest();
  const token = Buffer.from((await requestTimestamp(tsaUrl, digest)).toBER(false));
  if (token.length > TOKEN_ROOM) throw new Error(`the document timestamp token (${token.length} bytes) does not fit the ${TOKEN_ROOM} bytes reserved`);
  updated.write(token.toString('hex'), contentsStart + 1, 'latin1');
  return updated;
}

/** The certificates a timestamp token (CMS ContentInfo) carries, as DER. */
export function certificatesOfToken(token: asn1js.AsnType): Uint8Array[] {
  const signedData = new pkijs.SignedData({ schema: new pkijs.ContentInfo({ schema: token }).content });
  return (signedData.certificates ?? []).filter((item): item is pkijs.Certificate => item instanceof pkijs.Certificate).map(derOf);
}
