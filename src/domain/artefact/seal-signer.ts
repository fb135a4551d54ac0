/**
 * The one interface through which the service's seal is signed (issue 35). Whatever holds the key
 * (a PKCS#12 file in this process, a PKCS#11 token, a CSC trust service provider) is asked for one thing: the RSASSA-PKCS1-v1_5
 * signature of a SHA-256 digest, the digest of a CMS's signed attributes. The CMS itself (its
 * attributes, certificates, timestamp) is built around that signature in pdf/seal.ts, the same
 * for every signer, so a token-held key never needs to see a document.
 */
import { constants, createPrivateKey, type KeyObject, privateEncrypt } from 'node:crypto';
import { SEAL_SIGNER_UNAVAILABLE } from '../pdf/seal.ts';

export { SEAL_SIGNER_UNAVAILABLE };

export type SealSigner = {
  /** `p12`: the key is in this process (SEAL_P12 or the generated one). `pkcs11`: on a token. `csc`: at a trust service provider (CSC API v2). */
  readonly kind: 'p12' | 'pkcs11' | 'csc';
  /** The RSASSA-PKCS1-v1_5 signature of a SHA-256 digest (32 bytes). Fails with `SealSignerUnavailableError` when the key cannot be reached. */
  signDigest(digest: Uint8Array): Promise<Uint8Array>;
  /** Releases the module's sessions (a PKCS#12 signer holds nothing). */
  close(): Promise<void>;
};

/**
 * The key could not be reached when a seal needed it (a token removed, a module that failed):
 * the seal job fails and is retried, and this name is what the job's `last_error` and the log say.
 */
export class SealSignerUnavailableError extends Error {
  /** Crosses the worker thread boundary (an Error's class does not): the job's failure reason `seal_signer_unavailable`. */
  readonly code = SEAL_SIGNER_UNAVAILABLE;
  /** The module's return code (`CKR_…`), or the CSC failure's reason (`unreachable`, `refused`, …), when there was one. */
  readonly moduleCode: string | undefined;

  constructor(detail: string, moduleCode?: string) {
    super(`Seal.SignerUnavailable: the seal's signing key could not be used (${detail})`);
    this.name = 'SealSignerUnavailableError';
    this.moduleCode = moduleCode;
  }
}

/** DER prefix of a DigestInfo for SHA-256 (RFC 8017 §9.2, note 1): what PKCS#1 v1.5 signs around the hash. */
export const SHA256_DIGEST_INFO_PREFIX = Buffer.from('3031300d060960864801650304020105000420', 'hex');

export function digestInfoOf(digest: Uint8Array): Buffer {
  if (digest.length !== 32) throw new Error(`a SHA-256 digest has 32 bytes, not ${digest.length}`);
  return Buffer.concat([SHA256_DIGEST_INFO_PREFIX, digest]);
}

/** PKCS#1 v1.5 signing of a digest with a key held in this process: the DigestInfo, padded with type 1 and raised to the private exponent. */
export function signDigestWithKey(key: KeyObject, digest: Uint8Array): Uint8Array {
  return privateEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, digestInfoOf(digest));
}

/** The signer of a key held in this process (`keyPkcs8`: PKCS#8 DER). */
export function inProcessSigner(keyPkcs8: Uint8Array): SealSigner {
  const key = createPrivateKey({ key: Buffer.from(keyPkcs8), format: 'der', type: 'pkcs8' });
  return {
    kind: 'p12',
    signDigest: async (digest) => signDigestWithKey(key, digest),
    close: async () => {},
  };
}
