/**
 * RFC 3161 timestamps over HTTP (the signature timestamp of PAdES B-T and the document timestamp
 * of B-LTA): the request names a SHA-256 digest; the answer is the token, a CMS ContentInfo.
 * Runs in a PDF worker thread.
 */
import { randomBytes, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

// pkijs's crypto for every module of the seal and its verification (they import this one).
pkijs.setEngine('node', new pkijs.CryptoEngine({ name: 'node', crypto: webcrypto as unknown as Crypto }));

const sha256 = '2.16.840.1.101.3.4.2.1';

export function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

/** A TSA that cannot give a timestamp: the seal fails (and the job retries), it never goes out without one. */
export class TimestampError extends Error {
  /** Crosses the worker thread boundary (an Error's class does not): the job's failure reason `timestamp_unavailable`. */
  readonly code = 'TIMESTAMP_UNAVAILABLE';

  constructor(message: string) {
    super(`timestamp authority: ${message}`);
    this.name = 'TimestampError';
  }
}

/**
 * A random nonce as the bytes of a DER INTEGER: positive (high bit clear) and minimal (a first byte
 * of 0x00 followed by one whose high bit is clear is padding, which DER forbids). asn1js writes the
 * bytes as given, and a strict TSA (OpenSSL's) answers a padded nonce with a rejection (status 2):
 * a zero first byte made one request in 256 fail. 62 random bits.
 */
export function timestampNonce(): Buffer {
  const nonce = randomBytes(8);
  nonce[0] = 0x40 | (nonce[0]! & 0x3f);
  return nonce;
}

/** The DER of an RFC 3161 request for `digest` (SHA-256), with a nonce, asking for the TSA's certificate. */
export function timestampRequest(digest: Buffer, nonce: Buffer = timestampNonce()): Buffer<ArrayBuffer> {
  const request = new pkijs.TimeStampReq({
    version: 1,
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: sha256 }),
      hashedMessage: new asn1js.OctetString({ valueHex: toArrayBuffer(digest) }),
    }),
    nonce: new asn1js.Integer({ valueHex: toArrayBuffer(nonce) }),
    certReq: true,
  });
  return Buffer.from(request.toSchema().toBER(false));
}

/** Asks the TSA (RFC 3161 over HTTP) to timestamp `digest` (SHA-256); answers the token (a CMS ContentInfo). */
export async function requestTimestamp(tsaUrl: string, digest: Buffer): Promise<asn1js.AsnType> {
  let response: Response;
  try {
    response = await fetch(tsaUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/timestamp-query' },
      body: timestampRequest(digest),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw new TimestampError(`unreachable (${(error as Error).message})`);
  }
  if (!response.ok) throw new TimestampError(`answered HTTP ${response.status}`);
  let parsed: pkijs.TimeStampResp;
  try {
    parsed = pkijs.TimeStampResp.fromBER(await response.arrayBuffer());
  } catch (error) {
    throw new TimestampError(`sent something that is not a timestamp response (${(error as Error).message})`);
  }
  if (parsed.status.status > 1 || parsed.timeStampToken === undefined) throw new TimestampError(`refused the request (status ${parsed.status.status})`);
  return parsed.timeStampToken.toSchema();
}
