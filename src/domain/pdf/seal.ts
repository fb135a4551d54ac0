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
import { PDFArray, PDFDict, type PDFDocument, PDFName, PDFRef, PDFString } from 'pdf-lib';
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
  /** The certificates of earlier signatures in the file (its signers', issue 35): their validation data joins the seal's DSS. */
  signerCertificates?: Uint8Array[];
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
  ecPublicKey: '1.2.840.10045.2.1',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
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
    const attributes = signedAttributesOf(createHash('sha256').update(pdfBuffer).digest(), this.material.certificates[0]!);
    let signature: Uint8Array;
    if (key !== undefined) signature = privateEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, Buffer.concat([SHA256_DIGEST_INFO_PREFIX, attributes.digest]));
    else if (this.signDigest !== undefined) signature = await this.signDigest(attributes.digest);
    else throw new Error('the seal material carries no key and no signer was given');
    const built = await assembleCms({ certificates, attributes, signature, tsaUrl: this.tsaUrl });
    this.timestampCertificates = built.timestampCertificates;
    return built.cms;
  }
}

/** The signed attributes of a PAdES CMS over content whose SHA-256 is `contentDigest`, and the digest that is signed. */
export type SignedAttributes = { attributes: pkijs.SignedAndUnsignedAttributes; digest: Buffer };

/**
 * The content-type, message-digest and signing-certificate-v2 signed attributes (ETSI EN 319 122-1
 * B-B; no signing-time: PAdES puts the time in the signature dictionary's /M), and the SHA-256 of
 * their DER as a SET: what is signed, by the seal's key or by a signer's key at a trust service
 * provider (the same attributes again from the same digest and certificate, so a remote signature
 * can be embedded after the round trip without keeping them).
 */
export function signedAttributesOf(contentDigest: Uint8Array, signerCertificateDer: Uint8Array): SignedAttributes {
  const certificateHash = createHash('sha256').update(signerCertificateDer).digest();
  // SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2 }; ESSCertIDv2 with the
  // default hash algorithm (SHA-256) is SEQUENCE { certHash OCTET STRING }.
  const signingCertificateV2 = new asn1js.Sequence({
    value: [new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [new asn1js.OctetString({ valueHex: toArrayBuffer(certificateHash) })] })] })],
  });
  const attributes = new pkijs.SignedAndUnsignedAttributes({
    type: 0,
    attributes: [
      new pkijs.Attribute({ type: oids.contentType, values: [new asn1js.ObjectIdentifier({ value: oids.data })] }),
      new pkijs.Attribute({ type: oids.messageDigest, values: [new asn1js.OctetString({ valueHex: toArrayBuffer(contentDigest) })] }),
      new pkijs.Attribute({ type: oids.signingCertificateV2, values: [signingCertificateV2] }),
    ],
  });
  const der = new Uint8Array(attributes.toSchema().toBER());
  // Signed as a SET (tag 0x31), stored as [0] IMPLICIT.
  der[0] = 0x31;
  return { attributes, digest: createHash('sha256').update(der).digest() };
}

/** The CMS signature algorithm of a certificate's key: RSASSA-PKCS1-v1_5 or ECDSA, with SHA-256. */
function signatureAlgorithmOf(certificate: pkijs.Certificate): pkijs.AlgorithmIdentifier {
  if (certificate.subjectPublicKeyInfo.algorithm.algorithmId === oids.ecPublicKey) return new pkijs.AlgorithmIdentifier({ algorithmId: oids.ecdsaWithSha256 });
  return new pkijs.AlgorithmIdentifier({ algorithmId: oids.sha256WithRsa, algorithmParams: new asn1js.Null() });
}

/**
 * The detached CMS SignedData around a signature of `attributes.digest` made elsewhere (the seal's
 * key in this thread or on a token, a signer's key at a trust service), with the certificates
 * (the signer's first) and, with a TSA, the signature timestamp (PAdES B-T) as an unsigned attribute.
 */
export async function assembleCms(options: {
  certificates: (pkijs.Certificate | Uint8Array)[];
  attributes: SignedAttributes;
  signature: Uint8Array;
  tsaUrl?: string;
}): Promise<{ cms: Buffer; timestampCertificates: Uint8Array[] }> {
  const certificates = options.certificates.map((certificate) => (certificate instanceof pkijs.Certificate ? certificate : pkijs.Certificate.fromBER(toArrayBuffer(certificate))));
  const signer = certificates[0]!;
  const sha256 = () => new pkijs.AlgorithmIdentifier({ algorithmId: oids.sha256, algorithmParams: new asn1js.Null() });
  const signerInfo = new pkijs.SignerInfo({
    version: 1,
    sid: new pkijs.IssuerAndSerialNumber({ issuer: signer.issuer, serialNumber: signer.serialNumber }),
    signedAttrs: options.attributes.attributes,
    digestAlgorithm: sha256(),
    signatureAlgorithm: signatureAlgorithmOf(signer),
    signature: new asn1js.OctetString({ valueHex: toArrayBuffer(options.signature) }),
  });
  const signedData = new pkijs.SignedData({
    version: 1,
    encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: oids.data }),
    digestAlgorithms: [sha256()],
    signerInfos: [signerInfo],
    certificates,
  });
  let timestampCertificates: Uint8Array[] = [];
  if (options.tsaUrl !== undefined) {
    const token = await requestTimestamp(options.tsaUrl, createHash('sha256').update(options.signature).digest());
    timestampCertificates = certificatesOfToken(token);
    signerInfo.unsignedAttrs = new pkijs.SignedAndUnsignedAttributes({
      type: 1,
      attributes: [new pkijs.Attribute({ type: oids.signatureTimeStampToken, values: [token] })],
    });
  }
  const contentInfo = new pkijs.ContentInfo({ contentType: oids.signedData, content: signedData.toSchema(true) });
  return { cms: Buffer.from(contentInfo.toSchema().toBER(false)), timestampCertificates };
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
  // Every signature field is named Signature1 by the library: a file with several signatures (its
  // signers', then the seal) gives each its own name, so viewers list each field on its own.
  const fields = pdf.catalog.lookupMaybe(PDFName.of('AcroForm'), PDFDict)?.lookupMaybe(PDFName.of('Fields'), PDFArray);
  const widget = fields === undefined || fields.size() === 0 ? undefined : fields.lookupMaybe(fields.size() - 1, PDFDict);
  widget?.set(PDFName.of('T'), PDFString.of(`Signature${fields!.size()}`));
  // The first page (its /Annots), the catalog (a new /AcroForm) or the AcroForm it points to.
  return [page.ref, pdf.context.trailerInfo.Root as PDFRef, ...(acroForm instanceof PDFRef ? [acroForm] : [])];
}

/** Signs a file holding the placeholder (the whole file is covered), then adds the long-term validation data when timestamped. */
async function sign(unsigned: Buffer, material: SealMaterial, info: SealInfo, signDigest?: DigestSigner): Promise<Buffer> {
  const signer = new PadesSigner(material, info.tsaUrl, signDigest);
  const signed = await new SignPdf().sign(unsigned, signer);
  if (info.tsaUrl === undefined) return signed;
  // B-LT, then B-LTA (pdf/ltv.ts): the validation data as it is now, then a document timestamp over all of it.
  const withDss = await appendDss(signed, await gatherValidationData(material.certificates, [...signer.timestampCertificates, ...(info.signerCertificates ?? [])]));
  return appendDocumentTimestamp(withDss, info.tsaUrl);
}

/**
 * `pdf` with a signature placeholder, saved: whole, or (`update`) as an incremental update of
 * `update.file` holding the objects `changed`, those numbered above `since` (what drawing changed
 * and added) and the signature's own, so every byte of `file` stays as it was (pdf/incremental.ts).
 */
async function withPlaceholder(pdf: PDFDocument, material: SealMaterial, info: SealInfo, update?: { file: Buffer; changed: PDFRef[]; since: number }): Promise<Buffer> {
  const placed = addPlaceholder(pdf, material, info);
  if (update === undefined) return Buffer.from(await pdf.save({ useObjectStreams: false, updateFieldAppearances: false, objectsPerTick: Infinity }));
  await pdf.flush();
  return appendUpdate(update.file, pdf, [...update.changed, ...placed, ...objectsAddedSince(pdf, update.since)]);
}

/** Adds the signature placeholder to `pdf`, saves it and signs it: the whole file is covered. */
export async function sealPdf(pdf: PDFDocument, material: SealMaterial, info: SealInfo, signDigest?: DigestSigner): Promise<Buffer> {
  return sign(await withPlaceholder(pdf, material, info), material, info, signDigest);
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
  return sign(await withPlaceholder(pdf, material, info, { file, ...update }), material, info, signDigest);
}

/** Takes the bytes a placeholder's /ByteRange covers (SignPdf hands them over) and signs nothing: the signature comes later. */
class CapturingSigner extends Signer {
  contentDigest: Buffer | undefined;
  override async sign(pdfBuffer: Buffer): Promise<Buffer> {
    this.contentDigest = createHash('sha256').update(pdfBuffer).digest();
    return Buffer.alloc(0);
  }
}

/**
 * A signer's signature made at a trust service provider (issue 35), in two halves around the round
 * trip through the signer's browser. First `pdf` gets its placeholder, saved whole or as an update of
 * `update.file` (after an earlier signature, always an update: the earlier bytes stay as they are),
 * its /ByteRange fixed and its /Contents left zeros: the prepared file, and the SHA-256 of the bytes
 * the range covers. The signed attributes' digest (`signedAttributesOf`) is what the provider signs.
 */
export async function prepareExternalSignature(
  pdf: PDFDocument,
  signature: { certificates: Uint8Array[]; info: SealInfo },
  update?: { file: Buffer; changed: PDFRef[]; since: number },
): Promise<{ prepared: Buffer; contentDigest: Buffer }> {
  const unsigned = await withPlaceholder(pdf, { certificates: signature.certificates }, signature.info, update);
  const capturing = new CapturingSigner();
  const prepared = await new SignPdf().sign(unsigned, capturing);
  return { prepared, contentDigest: capturing.contentDigest! };
}

/** The last /ByteRange of a file: its signature placeholder's. */
function lastByteRange(file: Buffer): [number, number, number, number] {
  const text = file.subarray(Math.max(0, file.length - 4 * 1024 * 1024)).toString('latin1');
  const shift = Math.max(0, file.length - 4 * 1024 * 1024);
  const match = [...text.matchAll(/\/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\]/g)].at(-1);
  if (match === undefined) throw new Error('the prepared file has no signature placeholder');
  const range = match.slice(1, 5).map(Number) as [number, number, number, number];
  if (range[2] <= range[1] || range[2] + range[3] > file.length || match.index + shift < range[0]) throw new Error("the prepared file's /ByteRange is not its own");
  return range;
}

/** The SHA-256 of what the prepared file's last placeholder covers (checked again before embedding). */
export function contentDigestOf(prepared: Buffer): Buffer {
  const [a, b, c, d] = lastByteRange(prepared);
  return createHash('sha256')
    .update(prepared.subarray(a, a + b))
    .update(prepared.subarray(c, c + d))
    .digest();
}

/**
 * The second half: the CMS around the provider's `signature` of the signed attributes (with the
 * signer's certificates, and a signature timestamp with a TSA), written into the prepared file's
 * placeholder. Nothing else moves: the bytes the range covers are those the provider signed for.
 */
export async function embedExternalSignature(
  prepared: Buffer,
  options: { certificates: Uint8Array[]; signature: Uint8Array; tsaUrl?: string },
): Promise<{ signed: Buffer; timestampCertificates: Uint8Array[] }> {
  const [, b, c] = lastByteRange(prepared);
  const attributes = signedAttributesOf(contentDigestOf(prepared), options.certificates[0]!);
  const built = await assembleCms({ certificates: options.certificates, attributes, signature: options.signature, tsaUrl: options.tsaUrl });
  const hex = built.cms.toString('hex');
  const room = c - b - 2;
  if (hex.length > room) throw new Error(`the signature (${hex.length / 2} bytes) does not fit its placeholder (${room / 2} bytes)`);
  const signed = Buffer.from(prepared);
  signed.write(hex.padEnd(room, '0'), b + 1, 'latin1');
  return { signed, timestampCertificates: built.timestampCertificates };
}
