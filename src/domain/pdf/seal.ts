/**
 * PAdES baseline sealing (ETSI EN 319 142-1): B-B, B-T with a TSA, and then B-LT and B-LTA
 * (pdf/ltv.ts). B-B is: a CMS SignedData, detached, SHA-256, with the
 * content-type, message-digest and signing-certificate-v2 signed attributes, placed by @signpdf
 * into a `/SubFilter /ETSI.CAdES.detached` signature whose byte range covers the whole file.
 * pkijs builds the CMS (node-forge cannot write the signing-certificate-v2 attribute). Runs in a
 * PDF worker thread: only Node built-ins and the libraries are imported.
 */
import { constants, createHash, createPrivateKey, type KeyObject, privateEncrypt } from 'node:crypto';
import { pdflibAddPlaceholder } from '@signpdf/placeholder-pdf-lib';
import { SignPdf } from '@signpdf/signpdf';
import { Signer, SUBFILTER_ETSI_CADES_DETACHED } from '@signpdf/utils';
import * as asn1js from 'asn1js';
import { type PDFDocument, PDFName, PDFRef } from 'pdf-lib';
import * as pkijs from 'pkijs';
import { appendUpdate, objectsAddedSince } from './incremental.ts';
import { appendDocumentTimestamp, appendDss, certificatesOfToken, gatherValidationData } from './ltv.ts';
import { requestTimestamp, toArrayBuffer } from './timestamp.ts';

export { TimestampError } from './timestamp.ts';

/** The `code` of an error signing with the seal's key (artefact/seal-signer.ts), which crosses the thread boundary. */
export const SEAL_SIGNER_UNAVAILABLE = 'SEAL_SIGNER_UNAVAILABLE';

/**
 * Signs a SHA-256 digest (RSASSA-PKCS1-v1_5) with a key this thread does not hold: a token's,
 * reached through the main thread (pdf/worker.ts asks the pool, which asks the seal's signer).
 */
export type DigestSigner = (digest: Uint8Array) => Promise<Uint8Array>;

/** What the seal needs, as plain bytes so it crosses to a worker thread. */
export type SealMaterial = {
  /**
   * PKCS#8 DER of the RSA private key, when the key lives in the process (SEAL_SIGNER=p12);
   * absent when it is on a token, and each signature is asked for (`DigestSigner`).
   */
  keyPkcs8?: Uint8Array;
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
  sha256WithRsa: '1.2.840.113549.1.1.11',
};

/**
 * The seal's certificates parsed and its key imported, per material, for this thread: parsing the
 * chain (pkijs) cost more than the rest of the CMS together, and the material is the same seal
 * after seal. Keyed by the material's bytes (it is copied into the thread with every task).
 */
const preparedMaterials = new Map<string, { certificates: pkijs.Certificate[]; key: KeyObject | undefined }>();
function prepared(material: SealMaterial): { certificates: pkijs.Certificate[]; key: KeyObject | undefined } {
  const hash = createHash('sha256').update(material.keyPkcs8 ?? new Uint8Array(0));
  for (const der of material.certificates) hash.update(der);
  const cacheKey = hash.digest('hex');
  let entry = preparedMaterials.get(cacheKey);
  if (entry === undefined) {
    entry = {
      certificates: material.certificates.map((der) => pkijs.Certificate.fromBER(toArrayBuffer(der))),
      key: material.keyPkcs8 === undefined ? undefined : createPrivateKey({ key: Buffer.from(material.keyPkcs8), format: 'der', type: 'pkcs8' }),
    };
    // A seal whose certificate was replaced leaves its entry; a handful at most are ever kept.
    if (preparedMaterials.size >= 4) preparedMaterials.clear();
    preparedMaterials.set(cacheKey, entry);
  }
  return entry;
}

/** DER prefix of a SHA-256 DigestInfo (RFC 8017 §9.2): what PKCS#1 v1.5 pads and signs around the hash. */
const SHA256_DIGEST_INFO_PREFIX = Buffer.from('3031300d060960864801650304020105000420', 'hex');

export class PadesSigner extends Signer {
  readonly material: SealMaterial;
  readonly tsaUrl: string | undefined;
  /** The certificates the signature timestamp's token carried (for the DSS). */
  timestampCertificates: Uint8Array[] = [];

  /** Signs the digest when the material carries no key. */
  readonly signDigest: DigestSigner | undefined;

  constructor(material: SealMaterial, tsaUrl?: string, signDigest?: DigestSigner) {
    super();
    this.material = material;
    this.tsaUrl = tsaUrl;
    this.signDigest = signDigest;
  }

  override async sign(pdfBuffer: Buffer): Promise<Buffer> {
    const { certificates, key } = prepared(this.material);
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
    await this.signSignerInfo(signedData, key);
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

  /**
   * What pkijs's SignedData.sign does, with the signature made from the digest of the signed
   * attributes (DER, as a SET), so the same code serves a key in this thread and one on a token.
   */
  private async signSignerInfo(signedData: pkijs.SignedData, key: KeyObject | undefined): Promise<void> {
    const signerInfo = signedData.signerInfos[0]!;
    const sha256 = () => new pkijs.AlgorithmIdentifier({ algorithmId: oids.sha256, algorithmParams: new asn1js.Null() });
    signedData.digestAlgorithms = [sha256()];
    signerInfo.digestAlgorithm = sha256();
    signerInfo.signatureAlgorithm = new pkijs.AlgorithmIdentifier({ algorithmId: oids.sha256WithRsa, algorithmParams: new asn1js.Null() });
    const attributes = new Uint8Array(signerInfo.signedAttrs!.toSchema().toBER());
    // Signed as a SET (tag 0x31), stored as [0] IMPLICIT.
    attributes[0] = 0x31;
    const digest = createHash('sha256').update(attributes).digest();
    let signature: Uint8Array;
    if (key !== undefined) signature = privateEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, Buffer.concat([SHA256_DIGEST_INFO_PREFIX, digest]));
    else if (this.signDigest !== undefined) signature = await this.signDigest(digest);
    else throw new Error('the seal material carries no key and no signer was given');
    signerInfo.signature = new asn1js.OctetString({ valueHex: toArrayBuffer(signature) });
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
async function sign(unsigned: Buffer, material: SealMaterial, info: SealInfo, signDigest?: DigestSigner): Promise<Buffer> {
  const signer = new PadesSigner(material, info.tsaUrl, signDigest);
  const signed = await new SignPdf().sign(unsigned, signer);
  if (info.tsaUrl === undefined) return signed;
  // B-LT, then B-LTA (pdf/ltv.ts): the validation data as it is now, then a document timestamp over all of it.
  const withDss = await appendDss(signed, await gatherValidationData(material.certificates, signer.timestampCertificates));
  return appendDocumentTimestamp(withDss, info.tsaUrl);
}

/** Adds the signature placeholder to `pdf`, saves it and signs it: the whole file is covered. */
export async function sealPdf(pdf: PDFDocument, material: SealMaterial, info: SealInfo, signDigest?: DigestSigner): Promise<Buffer> {
  addPlaceholder(pdf, material, info);
  return sign(Buffer.from(await pdf.save({ useObjectStreams: false, updateFieldAppearances: false, objectsPerTick: Infinity })), material, info, signDigest);
}

/**
 * Seals `file` as `pdf` now has it, as an incremental update (pdf/incremental.ts): the objects
 * `changed` and those numbered above `since` (what drawing changed and added), and the signature's
 * own, appended to `file`, which stays as it was. The signature covers the whole result.
 */
export async function sealAsUpdate(
  file: Buffer,
  pdf: PDFDocument,
  update: { changed: PDFRef[]; since: number },
  seal: { material: SealMaterial; info: SealInfo; signDigest?: DigestSigner },
): Promise<Buffer> {
  const { material, info, signDigest } = seal;
  const placed = addPlaceholder(pdf, material, info);
  await pdf.flush();
  return sign(appendUpdate(file, pdf, [...update.changed, ...placed, ...objectsAddedSince(pdf, update.since)]), material, info, signDigest);
}
