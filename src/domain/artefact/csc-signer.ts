/**
 * SEAL_SIGNER=csc: the seal's key at a trust service provider, reached over the Cloud Signature
 * Consortium API v2 (domain/trust/csc-client.ts). As with a PKCS#11 token, the key never enters
 * the process: each seal sends the provider the SHA-256 of the CMS's signed attributes
 * (signatures/signHash) and gets back the RSASSA-PKCS1-v1_5 signature.
 *
 * The service authenticates as itself (OAuth 2 client credentials: SEAL_CSC_CLIENT_ID and its
 * secret); credentials/info gives the certificate chain, so none is configured here. A credential
 * whose provider asks for explicit authorization gets a SAD for each signature from
 * credentials/authorize with SEAL_CSC_PIN. The access token is kept until it expires or the
 * provider stops taking it (401), then asked again: a provider restarted, or another instance
 * sharing the credential, never needs this one restarted. Whatever fails at seal time (the
 * provider down, slow, refusing, the credential disabled) is `Seal.SignerUnavailable`: the seal
 * job fails by that name and is retried.
 */
import { constants, createHash, publicDecrypt, randomBytes, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import type { CscSignerConfig } from '../../config.ts';
import { type CscClient, type CscCredentialInfo, createCscClient, RSA_ENCRYPTION_OID, TrustServiceError } from '../trust/csc-client.ts';
import { digestInfoOf, type SealSigner, SealSignerUnavailableError } from './seal-signer.ts';

/** A start-up problem, one line naming the variable to fix. */
export class CscSetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CscSetupError';
  }
}

export type CscSeal = {
  signer: SealSigner;
  /** DER certificates, the signer's first (from credentials/info). */
  certificates: Uint8Array[];
};

/** A token is asked again this long before the provider said it expires: a signature started just before would otherwise meet a 401. */
const TOKEN_MARGIN_MS = 30_000;

function readSecret(source: { value: string } | { file: string }, variable: string): string {
  if ('value' in source) return source.value;
  try {
    return fs.readFileSync(source.file, 'utf8').split(/\r?\n/)[0] ?? '';
  } catch (error) {
    throw new CscSetupError(`${variable}: cannot read ${source.file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

/** What the provider said, for a start-up line: its error and description, or the kind of failure. */
function said(error: TrustServiceError): string {
  if (error.providerError !== undefined) return `${error.providerError}${error.providerErrorDescription !== undefined ? `: ${error.providerErrorDescription}` : ''}`;
  return error.message.replace(/^Trust service /, '');
}

/** Start-up: which variable a provider's failure points at. */
function setupError(config: CscSignerConfig, error: unknown, step: 'token' | 'info' | 'authorize' | 'sign'): CscSetupError {
  if (!(error instanceof TrustServiceError)) return new CscSetupError(`SEAL_CSC_URL: ${step} failed (${error instanceof Error ? error.message : String(error)})`);
  if (error.transient) return new CscSetupError(`SEAL_CSC_URL: the provider at ${config.url} could not be reached (${said(error)})`);
  if (error.reason === 'invalid_response') return new CscSetupError(`SEAL_CSC_URL: ${config.url} does not answer as a CSC API v2 provider (${said(error)})`);
  switch (step) {
    case 'token': {
      const variable = error.providerError === 'invalid_client' || error.status === 401 ? 'SEAL_CSC_CLIENT_SECRET' : 'SEAL_CSC_CLIENT_ID';
      return new CscSetupError(`${variable}: the provider refused the client credentials of "${config.clientId}" (${said(error)})`);
    }
    case 'info':
      return new CscSetupError(`SEAL_CSC_CREDENTIAL_ID: the provider has no credential "${config.credentialId}" for client "${config.clientId}" (${said(error)})`);
    case 'authorize':
      return new CscSetupError(
        `${config.pin !== undefined && 'file' in config.pin ? 'SEAL_CSC_PIN_FILE' : 'SEAL_CSC_PIN'}: the provider refused to authorize credential "${config.credentialId}" (${said(error)})`,
      );
    case 'sign':
      return new CscSetupError(`SEAL_CSC_CREDENTIAL_ID: credential "${config.credentialId}" could not sign the start-up probe (${said(error)})`);
  }
}

/** Whether the credential, as credentials/info describes it, can seal; a line naming the variable when not. */
function checkCredential(config: CscSignerConfig, info: CscCredentialInfo, pin: string | undefined): void {
  const name = `credential "${config.credentialId}"`;
  if (info.keyStatus !== 'enabled') throw new CscSetupError(`SEAL_CSC_CREDENTIAL_ID: ${name} has its key ${info.keyStatus} at the provider`);
  if (info.certificateStatus !== undefined && info.certificateStatus !== 'valid') {
    throw new CscSetupError(`SEAL_CSC_CREDENTIAL_ID: ${name} has a certificate the provider says is ${info.certificateStatus}`);
  }
  if (info.keyAlgorithms.length > 0 && !info.keyAlgorithms.includes(RSA_ENCRYPTION_OID)) {
    throw new CscSetupError(`SEAL_CSC_CREDENTIAL_ID: ${name} is not an RSA key (algorithms ${info.keyAlgorithms.join(', ')}); the seal signs RSASSA-PKCS1-v1_5`);
  }
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(info.certificates[0]!);
  } catch (error) {
    throw new CscSetupError(`SEAL_CSC_CREDENTIAL_ID: the certificate of ${name} cannot be read (${(error as Error).message})`);
  }
  if (certificate.publicKey.asymmetricKeyType !== 'rsa') throw new CscSetupError(`SEAL_CSC_CREDENTIAL_ID: the certificate of ${name} is not for an RSA key`);
  if (info.authMode === 'oauth2code') {
    throw new CscSetupError(
      `SEAL_CSC_CREDENTIAL_ID: ${name} is authorized by a person's OAuth 2 consent (auth mode oauth2code), which a service cannot give; ask the provider for a seal credential usable with client credentials (implicit or explicit)`,
    );
  }
  if (info.authMode === 'explicit' && pin === undefined) {
    throw new CscSetupError(`SEAL_CSC_PIN: ${name} needs explicit authorization (${info.authObjects.map((item) => item.id).join(', ') || 'a PIN'}); set SEAL_CSC_PIN or SEAL_CSC_PIN_FILE`);
  }
  if (info.authMode === 'explicit' && info.authObjects.some((item) => item.type === 'OTP')) {
    throw new CscSetupError(`SEAL_CSC_CREDENTIAL_ID: ${name} asks for a one-time password at each signature, which an unattended seal cannot give`);
  }
}

/**
 * Gets a client-credentials token, reads the credential (its chain, its key, how it is authorized)
 * and signs a probe that must verify under its certificate. Any failure is a `CscSetupError`
 * naming the variable: an unreachable provider (SEAL_CSC_URL), refused client credentials
 * (SEAL_CSC_CLIENT_SECRET), an unknown credential (SEAL_CSC_CREDENTIAL_ID), a wrong PIN
 * (SEAL_CSC_PIN). `probe: false`: the chain only (the command line's fingerprint).
 */
export async function openCscSeal(config: CscSignerConfig, options: { timeoutMs?: number; fetch?: typeof fetch; probe?: boolean } = {}): Promise<CscSeal> {
  const clientSecret = readSecret(config.clientSecret, 'SEAL_CSC_CLIENT_SECRET_FILE');
  const pin = config.pin === undefined ? undefined : readSecret(config.pin, 'SEAL_CSC_PIN_FILE');
  const client = createCscClient({ baseUrl: config.url, clientId: config.clientId, clientSecret }, { timeoutMs: options.timeoutMs, fetch: options.fetch });

  let token: { accessToken: string; expiresAt: number };
  try {
    token = tokenOf(await client.clientCredentialsToken());
  } catch (error) {
    throw setupError(config, error, 'token');
  }
  let info: CscCredentialInfo;
  try {
    info = await client.credentialInfo(token.accessToken, config.credentialId);
  } catch (error) {
    throw setupError(config, error, 'info');
  }
  checkCredential(config, info, pin);
  const certificates = info.certificates;
  const explicit = info.authMode === 'explicit';

  if (options.probe !== false) {
    const digest = createHash('sha256').update(randomBytes(32)).digest();
    let sad: string | undefined;
    if (explicit) {
      try {
        sad = await client.authorizeCredential(token.accessToken, { credentialId: config.credentialId, hashes: [digest], pin });
      } catch (error) {
        throw setupError(config, error, 'authorize');
      }
    }
    let signature: Uint8Array;
    try {
      [signature] = (await client.signHash(token.accessToken, { credentialId: config.credentialId, sad, hashes: [digest] })) as [Uint8Array];
    } catch (error) {
      throw setupError(config, error, 'sign');
    }
    if (!signs(new X509Certificate(certificates[0]!), digest, signature)) {
      throw new CscSetupError(`SEAL_CSC_CREDENTIAL_ID: the probe signature of credential "${config.credentialId}" does not verify under the certificate credentials/info gave`);
    }
  }

  return { signer: cscSigner({ config, client, pin, explicit, token }), certificates };
}

function tokenOf(answer: { accessToken: string; expiresInSeconds: number | undefined }): { accessToken: string; expiresAt: number } {
  return { accessToken: answer.accessToken, expiresAt: answer.expiresInSeconds === undefined ? Number.POSITIVE_INFINITY : Date.now() + answer.expiresInSeconds * 1000 - TOKEN_MARGIN_MS };
}

function cscSigner(setup: { config: CscSignerConfig; client: CscClient; pin: string | undefined; explicit: boolean; token: { accessToken: string; expiresAt: number } }): SealSigner {
  const { config, client, pin, explicit } = setup;
  let token: { accessToken: string; expiresAt: number } | undefined = setup.token;
  /** One token request at a time: concurrent seals wait for the same one. */
  let asking: Promise<{ accessToken: string; expiresAt: number }> | undefined;
  let closed = false;

  function currentToken(): Promise<{ accessToken: string; expiresAt: number }> {
    if (token !== undefined && token.expiresAt > Date.now()) return Promise.resolve(token);
    asking ??= client
      .clientCredentialsToken()
      .then((answer) => {
        token = tokenOf(answer);
        return token;
      })
      .finally(() => {
        asking = undefined;
      });
    return asking;
  }

  async function signOnce(digest: Uint8Array, accessToken: string): Promise<Uint8Array> {
    const sad = explicit ? await client.authorizeCredential(accessToken, { credentialId: config.credentialId, hashes: [digest], pin }) : undefined;
    const [signature] = await client.signHash(accessToken, { credentialId: config.credentialId, sad, hashes: [digest] });
    return signature!;
  }

  return {
    kind: 'csc',
    async signDigest(digest) {
      if (closed) throw new SealSignerUnavailableError('the signer was closed (the service is stopping)');
      // digestInfoOf checks the length: a CSC provider is sent the hash itself, not the DigestInfo.
      digestInfoOf(digest);
      try {
        const first = await currentToken();
        try {
          return await signOnce(digest, first.accessToken);
        } catch (error) {
          // The provider no longer takes the token (expired early, the provider restarted): one new token, one more try.
          if (!(error instanceof TrustServiceError) || error.status !== 401) throw error;
          if (token === first) token = undefined;
          return await signOnce(digest, (await currentToken()).accessToken);
        }
      } catch (error) {
        const detail =
          error instanceof TrustServiceError ? `CSC provider ${config.url}, credential "${config.credentialId}": ${error.message.replace(/^Trust service /, '')}` : String(error);
        throw new SealSignerUnavailableError(detail, error instanceof TrustServiceError ? error.reason : undefined);
      }
    },
    async close() {
      closed = true;
      token = undefined;
    },
  };
}

/** Whether `signature` is the PKCS#1 v1.5 signature of `digest` under the certificate's key. */
function signs(certificate: X509Certificate, digest: Uint8Array, signature: Uint8Array): boolean {
  try {
    return publicDecrypt({ key: certificate.publicKey, padding: constants.RSA_PKCS1_PADDING }, signature).equals(digestInfoOf(digest));
  } catch {
    return false;
  }
}
