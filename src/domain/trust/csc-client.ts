/**
 * A client of the Cloud Signature Consortium API v2 (issue 35): the open protocol through which a
 * trust service provider signs hashes with a key it keeps (a remote QSCD, a cloud HSM). The
 * service uses it for its own seal (SEAL_SIGNER=csc) and for signers' advanced and qualified
 * signatures; this module knows the protocol only, nothing of envelopes or seals.
 *
 * Every call is real HTTP (fetch) with its own deadline (AbortSignal.timeout), JSON bodies as the
 * specification's sections 11.x say, the OAuth 2 token request form-encoded as RFC 6749 §4 says.
 * Whatever goes wrong ends as one `TrustServiceError` whose `reason` says what kind of failure it
 * was (unreachable, timeout, refused, invalid_response), carrying the provider's own `error` and
 * `error_description` when it answered with them. Neither the client secret, a PIN, an OTP, a SAD
 * nor an access token is ever put in an error's message: those messages end up in logs and in
 * jobs' `last_error`.
 *
 * Base URL: the provider's CSC base, path included (`https://tsp.example/csc/v2`); the OAuth 2
 * endpoints (`oauth2/authorize`, `oauth2/token`) are taken under the same base, which is where the
 * specification puts them when `info`'s `oauth2` names no other server.
 */

/** A provider as the service is registered with it: the base URL and the OAuth 2 client it was given. */
export type CscProvider = { baseUrl: string; clientId: string; clientSecret: string };

export type TrustServiceFailure = 'unreachable' | 'timeout' | 'refused' | 'invalid_response';

/**
 * A call to a trust service provider that did not give what was asked. `reason`:
 * - `unreachable`: no answer (connection refused or reset, DNS, or a 5xx: the provider is not serving);
 * - `timeout`: no complete answer within the call's deadline;
 * - `refused`: the provider answered with an error (a wrong PIN, an unknown credential, a bad client secret, a revoked key);
 * - `invalid_response`: it answered, but not with what the specification says.
 */
export class TrustServiceError extends Error {
  readonly reason: TrustServiceFailure;
  /** The CSC operation, e.g. `signatures/signHash`. */
  readonly operation: string;
  /** HTTP status when the provider answered. */
  readonly status: number | undefined;
  /** The provider's OAuth / CSC error code (`invalid_grant`, `invalid_request`, …) when it gave one. */
  readonly providerError: string | undefined;
  /** The provider's `error_description` when it gave one. */
  readonly providerErrorDescription: string | undefined;

  constructor(options: { reason: TrustServiceFailure; operation: string; detail: string; status?: number; providerError?: string; providerErrorDescription?: string }) {
    super(`Trust service ${options.operation}: ${options.reason} (${options.detail})`);
    this.name = 'TrustServiceError';
    this.reason = options.reason;
    this.operation = options.operation;
    this.status = options.status;
    this.providerError = options.providerError;
    this.providerErrorDescription = options.providerErrorDescription;
  }

  /** Whether trying again later may succeed (the provider was away), as opposed to an answer that will not change. */
  get transient(): boolean {
    return this.reason === 'unreachable' || this.reason === 'timeout';
  }
}

/** OIDs the service uses: SHA-256, and RSA PKCS#1 v1.5 (rsaEncryption: the hash is given, so the algorithm names the key's use only). */
export const SHA256_OID = '2.16.840.1.101.3.4.2.1';
export const RSA_ENCRYPTION_OID = '1.2.840.113549.1.1.1';
export const SHA256_WITH_RSA_OID = '1.2.840.113549.1.1.11';

export type CscInfo = {
  specs: string;
  name: string;
  region?: string;
  description?: string;
  /** `oauth2code`, `oauth2client`, `basic`, `external`, … */
  authType: string[];
  /** The OAuth 2 server's base, when the provider names one. */
  oauth2?: string;
  methods: string[];
};

export type CscToken = { accessToken: string; tokenType: string; expiresInSeconds: number | undefined; credentialId?: string };

export type CscCredentialInfo = {
  credentialId: string;
  description?: string;
  /** `eu_eidas_qes`, `eu_eidas_aes`, … when the provider says. */
  signatureQualifier?: string;
  /** DER certificates, the signer's first, then its chain as the provider gave it. */
  certificates: Uint8Array[];
  certificateStatus?: string;
  subjectDN?: string;
  issuerDN?: string;
  serialNumber?: string;
  /** `enabled` or `disabled`. */
  keyStatus: string;
  /** The key's algorithm OIDs (`1.2.840.113549.1.1.1`: RSA). */
  keyAlgorithms: string[];
  keyLength?: number;
  /** `implicit` (nothing to give), `explicit` (credentials/authorize with PIN/OTP), `oauth2code` (a credential-scope OAuth token). */
  authMode: string;
  /** What explicit authorization asks for (`PIN`, `OTP`), as the provider names them. */
  authObjects: { type: string; id: string; label?: string }[];
  /** Sole Control Assurance Level: `1` or `2`. */
  scal?: string;
  multisign?: number;
};

export type AuthorizeUrlRequest = {
  redirectUri: string;
  state: string;
  scope: 'service' | 'credential';
  credentialId?: string;
  /** The hashes the credential token will be allowed to sign (scope `credential`). */
  hashes?: Uint8Array[];
  numSignatures?: number;
  hashAlgorithmOID?: string;
  /** PKCE (RFC 7636): the S256 challenge of a verifier the caller keeps for `exchangeCode`. */
  codeChallenge?: string;
  description?: string;
  lang?: string;
};

export type CscClient = {
  readonly provider: Pick<CscProvider, 'baseUrl' | 'clientId'>;
  info(): Promise<CscInfo>;
  /** OAuth 2 client credentials (scope `service`): what the service uses for its own credential. */
  clientCredentialsToken(): Promise<CscToken>;
  /** Where to send a user's browser for OAuth 2 authorization (CSC v2 §8.4.2). */
  authorizeUrl(request: AuthorizeUrlRequest): string;
  exchangeCode(request: { code: string; redirectUri: string; codeVerifier?: string }): Promise<CscToken>;
  listCredentials(accessToken: string, options?: { userId?: string }): Promise<string[]>;
  credentialInfo(accessToken: string, credentialId: string): Promise<CscCredentialInfo>;
  /** Explicit authorization (credentials/authorize): the PIN and/or OTP give a SAD valid for these hashes. */
  authorizeCredential(
    accessToken: string,
    request: { credentialId: string; hashes: Uint8Array[]; hashAlgorithmOID?: string; pin?: string; otp?: string; description?: string },
  ): Promise<string>;
  /** signatures/signHash: one signature per hash, in order. `sad` unless the token itself authorizes (a credential-scope token, an implicit credential). */
  signHash(accessToken: string, request: { credentialId: string; sad?: string; hashes: Uint8Array[]; hashAlgorithmOID?: string; signAlgo?: string }): Promise<Uint8Array[]>;
};

export const DEFAULT_CSC_TIMEOUT_MS = 10_000;

/** Answers read at most this many bytes: a credential's chain is a few kilobytes, a list of signatures the same. */
const MAX_ANSWER_BYTES = 1024 * 1024;

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

function base64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A text of the provider's, shortened: it is quoted in errors and logs, and the provider is not ours. */
function clip(text: string, max = 300): string {
  const flat = text.replace(/[\r\n\t]+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

export function createCscClient(provider: CscProvider, options: { timeoutMs?: number; fetch?: typeof fetch } = {}): CscClient {
  const timeoutMs = options.timeoutMs ?? DEFAULT_CSC_TIMEOUT_MS;
  const doFetch = options.fetch ?? fetch;
  const base = provider.baseUrl.replace(/\/+$/, '');

  async function call(operation: string, init: { body: string; contentType: string; accessToken?: string }): Promise<Json> {
    const headers: Record<string, string> = { 'content-type': init.contentType, accept: 'application/json' };
    if (init.accessToken !== undefined) headers.authorization = `Bearer ${init.accessToken}`;
    const signal = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await doFetch(`${base}/${operation}`, { method: 'POST', headers, body: init.body, signal, redirect: 'error' });
    } catch (error) {
      throw transportError(operation, error, signal);
    }
    let text: string;
    try {
      text = await readBounded(response);
    } catch (error) {
      if (error instanceof TrustServiceError) throw new TrustServiceError({ reason: error.reason, operation, detail: error.message });
      throw transportError(operation, error, signal);
    }
    let parsed: unknown;
    try {
      parsed = text.length === 0 ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!response.ok) {
      const providerError = isObject(parsed) && typeof parsed.error === 'string' ? clip(parsed.error, 100) : undefined;
      const providerErrorDescription = isObject(parsed) && typeof parsed.error_description === 'string' ? clip(parsed.error_description) : undefined;
      // 5xx: the provider is there but not serving (a gateway, a restart): like no answer, worth a later try.
      const reason: TrustServiceFailure = response.status >= 500 ? 'unreachable' : 'refused';
      const said = providerError !== undefined ? `${providerError}${providerErrorDescription !== undefined ? `: ${providerErrorDescription}` : ''}` : 'no error named';
      throw new TrustServiceError({ reason, operation, status: response.status, providerError, providerErrorDescription, detail: `HTTP ${response.status}, ${said}` });
    }
    if (!isObject(parsed)) throw invalid(operation, `HTTP ${response.status} without a JSON object`);
    return parsed;
  }

  async function readBounded(response: Response): Promise<string> {
    if (response.body === null) return '';
    const reader = response.body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_ANSWER_BYTES) {
        await reader.cancel().catch(() => {});
        throw new TrustServiceError({ reason: 'invalid_response', operation: 'read', detail: `an answer over ${MAX_ANSWER_BYTES} bytes` });
      }
      chunks.push(value);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  function transportError(operation: string, error: unknown, signal: AbortSignal): TrustServiceError {
    if (signal.aborted) return new TrustServiceError({ reason: 'timeout', operation, detail: `no answer within ${timeoutMs} ms` });
    // fetch says "fetch failed" and puts the system error (ECONNREFUSED, ENOTFOUND, …) in `cause`.
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const detail = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
    return new TrustServiceError({ reason: 'unreachable', operation, detail: clip(detail, 120) });
  }

  function invalid(operation: string, detail: string): TrustServiceError {
    return new TrustServiceError({ reason: 'invalid_response', operation, detail });
  }

  function json(operation: string, body: Json, accessToken?: string): Promise<Json> {
    return call(operation, { body: JSON.stringify(body), contentType: 'application/json', accessToken });
  }

  async function token(operation: string, form: Record<string, string>): Promise<CscToken> {
    const answer = await call(operation, { body: new URLSearchParams(form).toString(), contentType: 'application/x-www-form-urlencoded' });
    if (typeof answer.access_token !== 'string' || answer.access_token.length === 0) throw invalid(operation, 'no access_token');
    return {
      accessToken: answer.access_token,
      tokenType: typeof answer.token_type === 'string' ? answer.token_type : 'Bearer',
      expiresInSeconds: typeof answer.expires_in === 'number' ? answer.expires_in : undefined,
      ...(typeof answer.credentialID === 'string' ? { credentialId: answer.credentialID } : {}),
    };
  }

  function decodeBase64(operation: string, value: unknown, what: string): Uint8Array {
    if (typeof value !== 'string' || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) throw invalid(operation, `${what} is not base64`);
    return new Uint8Array(Buffer.from(value, value.includes('-') || value.includes('_') ? 'base64url' : 'base64'));
  }

  return {
    provider: { baseUrl: base, clientId: provider.clientId },

    async info() {
      const answer = await json('info', { lang: 'en-US' });
      if (typeof answer.specs !== 'string' || typeof answer.name !== 'string') throw invalid('info', 'no specs or name');
      const strings = (value: unknown) => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []);
      return {
        specs: answer.specs,
        name: answer.name,
        ...(typeof answer.region === 'string' ? { region: answer.region } : {}),
        ...(typeof answer.description === 'string' ? { description: answer.description } : {}),
        authType: strings(answer.authType),
        ...(typeof answer.oauth2 === 'string' ? { oauth2: answer.oauth2 } : {}),
        methods: strings(answer.methods),
      };
    },

    clientCredentialsToken() {
      return token('oauth2/token', { grant_type: 'client_credentials', client_id: provider.clientId, client_secret: provider.clientSecret, scope: 'service' });
    },

    authorizeUrl(request) {
      const url = new URL(`${base}/oauth2/authorize`);
      const query = url.searchParams;
      query.set('response_type', 'code');
      query.set('client_id', provider.clientId);
      query.set('redirect_uri', request.redirectUri);
      query.set('scope', request.scope);
      query.set('state', request.state);
      if (request.codeChallenge !== undefined) {
        query.set('code_challenge', request.codeChallenge);
        query.set('code_challenge_method', 'S256');
      }
      if (request.lang !== undefined) query.set('lang', request.lang);
      if (request.description !== undefined) query.set('description', request.description);
      if (request.scope === 'credential') {
        if (request.credentialId === undefined) throw new Error('authorizeUrl: scope credential needs a credentialId');
        const hashes = request.hashes ?? [];
        const hashAlgorithmOID = request.hashAlgorithmOID ?? SHA256_OID;
        query.set('credentialID', request.credentialId);
        query.set('numSignatures', String(request.numSignatures ?? hashes.length));
        if (hashes.length > 0) {
          // Both forms of v2: the `hashes` parameter (base64url, comma-separated) and the
          // RFC 9396 authorization_details of type `credential`, so either kind of provider reads them.
          query.set('hashes', hashes.map(base64Url).join(','));
          query.set('hashAlgorithmOID', hashAlgorithmOID);
          query.set(
            'authorization_details',
            JSON.stringify([
              {
                type: 'credential',
                credentialID: request.credentialId,
                hashAlgorithmOID,
                documentDigests: hashes.map((hash, index) => ({ hash: base64(hash), label: `document ${index + 1}` })),
              },
            ]),
          );
        }
      }
      return url.toString();
    },

    exchangeCode(request) {
      return token('oauth2/token', {
        grant_type: 'authorization_code',
        code: request.code,
        redirect_uri: request.redirectUri,
        client_id: provider.clientId,
        client_secret: provider.clientSecret,
        ...(request.codeVerifier !== undefined ? { code_verifier: request.codeVerifier } : {}),
      });
    },

    async listCredentials(accessToken, listOptions = {}) {
      const answer = await json('credentials/list', { ...(listOptions.userId !== undefined ? { userID: listOptions.userId } : {}), onlyValid: false }, accessToken);
      const ids = answer.credentialIDs;
      if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) throw invalid('credentials/list', 'no credentialIDs list');
      return ids as string[];
    },

    async credentialInfo(accessToken, credentialId) {
      const operation = 'credentials/info';
      const answer = await json(operation, { credentialID: credentialId, certificates: 'chain', certInfo: true, authInfo: true }, accessToken);
      const key = answer.key;
      const cert = answer.cert;
      const auth = answer.auth;
      if (!isObject(key) || !isObject(cert) || !Array.isArray(cert.certificates) || cert.certificates.length === 0) throw invalid(operation, 'no key or certificates');
      const certificates = cert.certificates.map((item, index) => decodeBase64(operation, item, `certificate ${index + 1}`));
      const authObjects = isObject(auth) && Array.isArray(auth.objects) ? auth.objects.filter(isObject) : [];
      return {
        credentialId,
        ...(typeof answer.description === 'string' ? { description: answer.description } : {}),
        ...(typeof answer.signatureQualifier === 'string' ? { signatureQualifier: answer.signatureQualifier } : {}),
        certificates,
        ...(typeof cert.status === 'string' ? { certificateStatus: cert.status } : {}),
        ...(typeof cert.subjectDN === 'string' ? { subjectDN: cert.subjectDN } : {}),
        ...(typeof cert.issuerDN === 'string' ? { issuerDN: cert.issuerDN } : {}),
        ...(typeof cert.serialNumber === 'string' ? { serialNumber: cert.serialNumber } : {}),
        keyStatus: typeof key.status === 'string' ? key.status : 'enabled',
        keyAlgorithms: Array.isArray(key.algo) ? key.algo.filter((item): item is string => typeof item === 'string') : [],
        ...(typeof key.len === 'number' ? { keyLength: key.len } : {}),
        // Absent `auth`: v1 providers answered `authMode` at the top.
        authMode: isObject(auth) && typeof auth.mode === 'string' ? auth.mode : typeof answer.authMode === 'string' ? answer.authMode : 'implicit',
        authObjects: authObjects.map((item) => ({
          type: typeof item.type === 'string' ? item.type : 'Password',
          id: typeof item.id === 'string' ? item.id : 'PIN',
          ...(typeof item.label === 'string' ? { label: item.label } : {}),
        })),
        ...(typeof answer.SCAL === 'string' ? { scal: answer.SCAL } : {}),
        ...(typeof answer.multisign === 'number' ? { multisign: answer.multisign } : {}),
      };
    },

    async authorizeCredential(accessToken, request) {
      const operation = 'credentials/authorize';
      const authData = [...(request.pin !== undefined ? [{ id: 'PIN', value: request.pin }] : []), ...(request.otp !== undefined ? [{ id: 'OTP', value: request.otp }] : [])];
      const answer = await json(
        operation,
        {
          credentialID: request.credentialId,
          numSignatures: request.hashes.length,
          hashes: request.hashes.map(base64),
          hashAlgorithmOID: request.hashAlgorithmOID ?? SHA256_OID,
          ...(authData.length > 0 ? { authData } : {}),
          ...(request.description !== undefined ? { description: request.description } : {}),
        },
        accessToken,
      );
      if (typeof answer.SAD !== 'string' || answer.SAD.length === 0) throw invalid(operation, 'no SAD');
      return answer.SAD;
    },

    async signHash(accessToken, request) {
      const operation = 'signatures/signHash';
      const answer = await json(
        operation,
        {
          credentialID: request.credentialId,
          ...(request.sad !== undefined ? { SAD: request.sad } : {}),
          hashes: request.hashes.map(base64),
          hashAlgorithmOID: request.hashAlgorithmOID ?? SHA256_OID,
          signAlgo: request.signAlgo ?? RSA_ENCRYPTION_OID,
          operationMode: 'S',
        },
        accessToken,
      );
      const signatures = answer.signatures;
      if (!Array.isArray(signatures)) throw invalid(operation, 'no signatures list');
      if (signatures.length !== request.hashes.length) throw invalid(operation, `${signatures.length} signatures for ${request.hashes.length} hashes`);
      return signatures.map((item, index) => decodeBase64(operation, item, `signature ${index + 1}`));
    },
  };
}
