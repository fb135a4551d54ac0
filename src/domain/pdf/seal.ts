/**
 * PAdES baseline sealing (ETSI EN 319 142-1): B-B, B-T with a TSA, and then B-LT and B-LTA
 * (pdf/ltv.ts). B-B is: a CMS SignedData, detached, SHA-256, with the
 * content-type, message-digest and signing-certificate-v2 signed attributes, placed by @signpdf
 * into a `/SubFilter /ETSI.CAdES.detached` signature whose byte range covers the whole file.
 * pkijs builds the CMS (node-forge cannot write the signing-certificate-v2 attribute). Runs in a
 * PDF worker thread: only Node built-ins and the libraries are imported.
 */
import { createHash, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { pdflibAddPlaceholder } from '@signpdf/placeholder-pdf-lib';
import { SignPdf } from '@signpdf/signpdf';
import { Signer, SUBFILTER_ETSI_CADES_DETACHED } from '@signpdf/utils';
import { PDFName, PDFRef, type PDFDocument } from 'pdf-lib';
import { appendUpdate, objectsAddedSince } from './incremental.ts';
import { appendDocumentTimestamp, appendDss, certificatesOfToken, gatherValidationData } from './ltv.ts';
import { requestTimestamp, toArrayBuffer } from './timestamp.ts';

export { TimestampError } from './timestamp.ts';

/** What the seal needs, as plain bytes so it crosses to a worker thread. */
export type SealMaterial = {
  /** PKCS#8 DER of the RSA private key. */
  keyPkcs8: Uint8Array;
  /** DER certificates, the signer's first. */
  certificates: Uint8Array[];
};

export type SealInfo = {
  reason: string;
  location?: string;
  contactInfo?: string;
  name: string;
  signingTime: Date;
  /** An RFC 3161 timestamp authority: the signature value is timestamped (PAdES B-T). */
  tsaUrl?: string;
};

const oids = {
  data: '1.2.840.113549.1.7.1',
  signedData: '1.2.840.113549.1.7.2',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
  signatureTimeStampToken: '1.2.840.113549.1.9.16.2.14',
  sha256: '2.16.840.1.101.3.4.2.1',
};


/**
 * The seal's certificates parsed and its key imported, per material, for this thread: parsing the
 * chain (pkijs) cost more than the rest of the CMS together, and the material is the same seal
 * after seal. Keyed by the material's bytes (it is copied into the thread with every task).
 */
const preparedMaterials = new Map<string, Promise<{ certificates: pkijs.Certificate[]; key: CryptoKey }>>();
function prepared(material: SealMaterial): Promise<{ certificates: pkijs.Certificate[]; key: CryptoKey }> {
  const hash = createHash('sha256').update(material.keyPkcs8);
  for (const der of material.certificates) hash.update(der);
  const cacheKey = hash.digest('hex');
  let entry = preparedMaterials.get(cacheKey);
  if (entry === undefined) {
    entry = (async () => ({
      certificates: material.certificates.map((der) => pkijs.Certificate.fromBER(toArrayBuffer(der))),
      key: (await webcrypto.subtle.importKey('pkcs8', toArrayBuffer(material.keyPkcs8), { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign'])) as unknown as CryptoKey,
    }))();
    // A seal whose certificate was replaced leaves its entry; a handful at most are ever kept.
    if (preparedMaterials.size >= 4) preparedMaterials.clear();
    preparedMaterials.set(cacheKey, entry);
    entry.catch(() => preparedMaterials.delete(cacheKey));
  }
  return entry;
}

export class PadesSigner extends Signer {
  readonly material: SealMaterial;
  readonly tsaUrl: string | undefined;
  /** The certificates the signature timestamp's token carried (for the DSS). */
  timestampCertificates: Uint8Array[] = [];

  constructor(material: SealMaterial, tsaUrl?: string) {
    super();
    this.material = material;
    this.tsaUrl = tsaUrl;
  }

  override async sign(pdfBuffer: Buffer): Promise<Buffer> {
    const { certificates, key } = await prepared(this.material);
    const signer = certificates[0]!;
    const digest = createHash('sha256').update(pdfBuffer).digest();
    const certificateHash = createHash('sha256').update(this.material.certificates[0]!).digest();
    // SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2 }; ESSCertIDv2 with the
    // default hash algorithm (SHA-256) is SEQUENCE { certHash OCTET STRING }.
    const signingCertificateV2 = new asn1js.Sequence({
      value: [new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [new asn1js.OctetString({ valueHex: toArrayBuffer(certificateHash) })] })] })],
    });
    const signedData = new pkijs.SignedData({
      version: 1,
      encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: oids.data }),
      signerInfos: [
        new pkijs.SignerInfo({
          version: 1,
          sid: new pkijs.IssuerAndSerialNumber({ issuer: signer.issuer, serialNumber: signer.serialNumber }),
          signedAttrs: new pkijs.SignedAndUnsignedAttributes({
            type: 0,
            attributes: [
              new pkijs.Attribute({ type: oids.contentType, values: [new asn1js.ObjectIdentifier({ value: oids.data })] }),
              new pkijs.Attribute({ type: oids.messageDigest, values: [new asn1js.OctetString({ valueHex: toArrayBuffer(digest) })] }),
              new pkijs.Attribute({ type: oids.signingCertificateV2, values: [signingCertificateV2] }),
            ],
          }),
        }),
      ],
      certificates,
    });
    await signedData.sign(key, 0, 'SHA-256');
    if (this.tsaUrl !== undefined) {
      const signerInfo = signedData.signerInfos[0]!;
      const token = await requestTimestamp(this.tsaUrl, createHash('sha256').update(signerInfo.signature.valueBlock.valueHexView).digest());
      this.timestampCertificates = certificatesOfToken(token);
      signerInfo.unsignedAttrs = new pkijs.SignedAndUnsignedAttributes({
        type: 1,
        attributes: [new pkijs.Attribute({ type: oids.signatureTimeStampToken, values: [token] })],
      });
    }
    const contentInfo = new pkijs.ContentInfo({ contentType: oids.signedData, content: signedData.toSchema(true) });
    return Buffer.from(contentInfo.toSchema().toBER(false));
  }
}

/** Adds the signature placeholder (dictionary, widget, AcroForm entry) to `pdf`; answers the existing objects it changed. */
function addPlaceholder(pdf: PDFDocument, material: SealMaterial, info: SealInfo): PDFRef[] {
  const page = pdf.getPage(0);
  const acroForm = pdf.catalog.get(PDFName.of('AcroForm'));
  pdflibAddPlaceholder({
    pdfDoc: pdf,
    pdfPage: page,
    reason: info.reason,
    contactInfo: info.contactInfo ?? '',
    name: info.name,
    location: info.location ?? '',
    signingTime: info.signingTime,
    subFilter: SUBFILTER_ETSI_CADES_DETACHED,
    // In hex digits (so even): room for the CMS (certificates, attributes, signature value) twice over.
    // A timestamp token carries the TSA's certificates: room for 12 KB more.
    signatureLength: 2 * (4096 + (info.tsaUrl === undefined ? 0 : 12_288) + material.certificates.reduce((sum, der) => sum + der.length, 0)),
    widgetRect: [0, 0, 0, 0],
  });
  // The first page (its /Annots), the catalog (a new /AcroForm) or the AcroForm it points to.
  return [page.ref, pdf.context.trailerInfo.Root as PDFRef, ...(acroForm instanceof PDFRef ? [acroForm] : [])];
}

/** Signs a file holding the placeholder (the whole file is covered), then adds the long-term validation data when timestamped. */
async function sign(unsigned: Buffer, material: SealMaterial, info: SealInfo): Promise<Buffer> {
  const signer = new PadesSigner(material, info.tsaUrl);
  const signed = await new SignPdf().sign(unsigned, signer);
  if (info.tsaUrl === undefined) return signed;
  // B-LT, then B-LTA (pdf/ltv.ts): the validation data as it is now, then a document timestamp over all of it.
  const withDss = await appendDss(signed, await gatherValidationData(material.certificates, signer.timestampCertificates));
  return appendDocumentTimestamp(withDss, info.tsaUrl);
}

/** Adds the signature placeholder to `pdf`, saves it and signs it: the whole file is covered. */
export async function sealPdf(pdf: PDFDocument, material: SealMaterial, info: SealInfo): Promise<Buffer> {
  addPlaceholder(pdf, material, info);
  return sign(Buffer.from(await pdf.save({ useObjectStreams: false, updateFieldAppearances: false, objectsPerTick: Infinity })), material, info);
}

/**
 * Seals `file` as `pdf` now has it, as an incremental update (pdf/incremental.ts): the objects
 * `changed` and those numbered above `since` (what drawing changed and added), and the signature's
 * own, appended to `file`, which stays as it was. The signature covers the whole result.
 */
export async function sealAsUpdate(file: Buffer, pdf: PDFDocument, update: { changed: PDFRef[]; since: number }, seal: { material: SealMaterial; info: SealInfo }): Promise<Buffer> {
  const { material, info } = seal;
  const placed = addPlaceholder(pdf, material, info);
  await pdf.flush();
  return sign(appendUpdate(file, pdf, [...update.changed, ...placed, ...objectsAddedSince(pdf, update.since)]), material, info);
}
