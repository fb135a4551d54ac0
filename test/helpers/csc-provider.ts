import { constants, createHash, createPrivateKey, type KeyObject, privateEncrypt, randomBytes, randomUUID, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createOpensslCa, type OcspResponder, startOcspResponder } from './openssl-ca.ts';

/**
 * A Cloud Signature Consortium API v2 trust service provider for tests (issue 35), on node:http on
 * the loopback: its own CA made with openssl, one RSA key and certificate per credential (the key
 * stays in this provider: only hashes come in and signatures go out), an OCSP responder over its
 * index so a revoked certificate is revoked for real, and the endpoints a remote-signing client
 * uses:
 *
 *   POST /csc/v2/info
 *   GET  /csc/v2/oauth2/authorize        an HTML page: the user types the PIN (and OTP) and consents;
 *   POST /csc/v2/oauth2/authorize        the page's form (or a test's own POST): 302 to redirect_uri with code and state
 *   POST /csc/v2/oauth2/token            authorization_code and client_credentials (form or JSON body)
 *   POST /csc/v2/credentials/list | info | authorize
 *   POST /csc/v2/signatures/signHash
 *
 * Who may use a credential: a user's own OAuth token (scope `service`) with a SAD from
 * credentials/authorize; a credential-scope token, bound at authorize time to the credential and
 * the hashes named there (and spent by signing them); the client's own client-credentials token
 * for the client's own credentials (seals: `addSeal`), without a SAD when the seal has no PIN.
 *
 * Failures a test can cause: a wrong PIN or OTP (an OAuth error), a revoked certificate (OCSP and
 * credentials/info say so; the key still signs, as a provider that has not caught up), a disabled
 * key (signHash refuses), the provider down (connection refused, or accepted and never answered),
 * slow answers, and answers held back (the operation done, its answer not sent until released: a
 * client killed meanwhile never gets it).
 */

export type CscUserLevel = 'advanced' | 'qualified';

export type CscTestProvider = {
  /** The CSC base URL (…/csc/v2), what `createCscClient` takes. */
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** The provider CA's certificate (PEM): the trust anchor of every certificate it issues. */
  caCertPem: string;
  caCertPath: string;
  /** The OCSP responder named in every certificate's AIA. */
  ocspUrl: string;
  /** A natural person's credential. `authMode` is what credentials/info announces (both ways work). */
  addUser(user: { name: string; email: string; pin: string; otp?: string; level: CscUserLevel; authMode?: 'oauth2code' | 'explicit' }): {
    credentialId: string;
    userId: string;
    certificatePem: string;
  };
  /** An organisation's seal credential, owned by the OAuth client: implicit without a PIN, explicit with one. */
  addSeal(seal: { name: string; pin?: string; level?: CscUserLevel }): { credentialId: string; certificatePem: string };
  /** Revokes the credential's certificate at the CA (OCSP answers revoked; credentials/info says `revoked`). */
  revoke(credentialId: string): void;
  /** Disables (or enables again) the credential's key: signHash and credentials/authorize refuse it. */
  disable(credentialId: string, disabled?: boolean): void;
  /** Down: `refused` closes the listening socket (connection refused); `hang` accepts and never answers. */
  setDown(down: boolean, mode?: 'refused' | 'hang'): Promise<void>;
  /** Every answer waits this long first (0: none). */
  setSlow(ms: number): void;
  /**
   * While set, requests for `operation` (`signatures/signHash`, `credentials/info`, …) are carried
   * out (a hash is signed and counted) but their answers are held back until `release()`; an
   * answer whose client went away meanwhile is dropped. `undefined` stops holding new ones.
   */
  holdAnswers(operation: string | undefined): void;
  /** Answers held back right now. */
  heldAnswers(): number;
  /** Sends every held answer (to clients still there). */
  releaseAnswers(): void;
  /** Forgets every access token issued so far (as tokens expiring): the next call with one answers 401 invalid_token. */
  expireTokens(): void;
  /** Hashes signed so far, per credential. */
  signedCount(credentialId: string): number;
  /** Requests received so far, by operation (`signatures/signHash`, `oauth2/token`, …). */
  requests(operation: string): number;
  close(): Promise<void>;
};

const SHA256_OID = '2.16.840.1.101.3.4.2.1';
const DIGEST_INFO_PREFIXES: Record<string, { prefix: string; length: number }> = {
  [SHA256_OID]: { prefix: '3031300d060960864801650304020105000420', length: 32 },
  '2.16.840.1.101.3.4.2.2': { prefix: '3041300d060960864801650304020205000430', length: 48 },
  '2.16.840.1.101.3.4.2.3': { prefix: '3051300d060960864801650304020305000440', length: 64 },
};
const SIGN_ALGORITHMS = new Set(['1.2.840.113549.1.1.1', '1.2.840.113549.1.1.11', '1.2.840.113549.1.1.12', '1.2.840.113549.1.1.13']);

// A few DER builders: enough for the QCStatements extension (ETSI EN 319 412-5).
function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
function derOf(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), derLength(content.length), content]);
}
function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  const bytes = [first! * 40 + second!];
  for (const arc of rest) {
    const chunk = [arc & 0x7f];
    for (let value = arc >> 7; value > 0; value >>= 7) chunk.unshift((value & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return derOf(0x06, Buffer.from(bytes));
}
const sequence = (...items: Buffer[]) => derOf(0x30, Buffer.concat(items));

/** QcCompliance, QcSSCD (the key in a QSCD) and QcType esign: what makes a certificate a qualified one for electronic signatures. */
export const QC_STATEMENTS_QUALIFIED_ESIGN = sequence(
  sequence(oid('0.4.0.1862.1.1')),
  sequence(oid('0.4.0.1862.1.4')),
  sequence(oid('0.4.0.1862.1.6'), sequence(oid('0.4.0.1862.1.6.1'))),
).toString('hex');

/** The same for a qualified seal (QcType eseal). */
const QC_STATEMENTS_QUALIFIED_ESEAL = sequence(sequence(oid('0.4.0.1862.1.1')), sequence(oid('0.4.0.1862.1.4')), sequence(oid('0.4.0.1862.1.6'), sequence(oid('0.4.0.1862.1.6.2')))).toString(
  'hex',
);

type Credential = {
  id: string;
  /** A user's id, or undefined: the client's own (a seal). */
  userId: string | undefined;
  level: CscUserLevel;
  authMode: 'implicit' | 'explicit' | 'oauth2code';
  pin: string | undefined;
  otp: string | undefined;
  key: KeyObject;
  certificates: Buffer[];
  certificate: X509Certificate;
  serialHex: string;
  revoked: boolean;
  disabled: boolean;
  signed: number;
  description: string;
};

type User = { id: string; name: string; email: string; pin: string; otp: string | undefined };

/** Hashes an authorization covers (hex), and how many signatures it still allows. */
type Grant = { credentialId: string; hashes: Set<string>; remaining: number; expires: number };

type Token = { kind: 'client' } | { kind: 'user'; userId: string } | { kind: 'credential'; userId: string; grant: Grant };

type Code = { clientId: string; redirectUri: string; userId: string; scope: 'service' | 'credential'; grant?: Grant; codeChallenge?: string; expires: number };

class OAuthError extends Error {
  readonly status: number;
  readonly error: string;
  readonly description: string;

  constructor(status: number, error: string, description: string) {
    super(description);
    this.status = status;
    this.error = error;
    this.description = description;
  }
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/** openssl's -subj syntax: `/` and `=` inside a value are escaped. */
function subjectValue(value: string): string {
  return value.replace(/[\\/=+]/g, (character) => `\\${character}`);
}

function hashesOf(values: unknown, what: string): Buffer[] {
  if (!Array.isArray(values) || values.length === 0) throw new OAuthError(400, 'invalid_request', `Missing or invalid ${what}`);
  return values.map((value) => {
    if (typeof value !== 'string' || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) throw new OAuthError(400, 'invalid_request', `Invalid ${what}`);
    return Buffer.from(value, /[-_]/.test(value) ? 'base64url' : 'base64');
  });
}

export async function startCscProvider(options: { clientId?: string; clientSecret?: string; name?: string } = {}): Promise<CscTestProvider> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'csc-'));
  const ca = createOpensslCa({ directory, subject: `/CN=${subjectValue(options.name ?? 'Test Trust Service CA')}/O=Test Trust Service` });
  const responder: OcspResponder = await startOcspResponder(ca);
  const clientId = options.clientId ?? `client-${randomBytes(4).toString('hex')}`;
  const clientSecret = options.clientSecret ?? randomBytes(16).toString('hex');
  const caCertPem = fs.readFileSync(ca.caCertPath, 'utf8');
  const caDer = new X509Certificate(caCertPem).raw;

  const users = new Map<string, User>();
  const credentials = new Map<string, Credential>();
  const tokens = new Map<string, Token>();
  const codes = new Map<string, Code>();
  const sads = new Map<string, Grant>();
  const counts = new Map<string, number>();
  let serial = 0x2000;
  let slowMs = 0;
  let down: false | 'refused' | 'hang' = false;
  let holding: string | undefined;
  const heldAnswers: (() => void)[] = [];
  const hanging = new Set<http.ServerResponse>();

  function issue(subject: string, level: CscUserLevel, kind: 'esign' | 'eseal', email?: string): { key: KeyObject; certificates: Buffer[]; certificate: X509Certificate; serialHex: string } {
    serial += 1;
    const serialHex = serial.toString(16).toUpperCase();
    const extensions = [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,nonRepudiation',
      `authorityInfoAccess=OCSP;URI:${responder.url}`,
      'subjectKeyIdentifier=hash',
      'authorityKeyIdentifier=keyid',
      ...(email !== undefined ? [`subjectAltName=email:${email}`] : []),
      ...(level === 'qualified' ? [`1.3.6.1.5.5.7.1.3=DER:${kind === 'esign' ? QC_STATEMENTS_QUALIFIED_ESIGN : QC_STATEMENTS_QUALIFIED_ESEAL}`] : []),
    ];
    const files = ca.issue({ name: `credential-${serialHex}`, subject, serialHex, days: 30, extensions });
    const key = createPrivateKey(fs.readFileSync(files.keyPath));
    // The key lives in this process from now on, as in a provider's HSM: not on disk.
    fs.rmSync(files.keyPath);
    const certificate = new X509Certificate(fs.readFileSync(files.certPath));
    return { key, certificates: [Buffer.from(certificate.raw), Buffer.from(caDer)], certificate, serialHex };
  }

  function credentialOf(id: unknown): Credential {
    const credential = typeof id === 'string' ? credentials.get(id) : undefined;
    if (credential === undefined) throw new OAuthError(400, 'invalid_request', 'Invalid parameter credentialID');
    return credential;
  }

  function tokenOf(request: http.IncomingMessage): Token {
    const header = request.headers.authorization ?? '';
    const match = /^Bearer (.+)$/i.exec(header);
    const token = match ? tokens.get(match[1]!) : undefined;
    if (token === undefined) throw new OAuthError(401, 'invalid_token', 'The access token is missing, unknown or expired');
    return token;
  }

  /** Whether the token's holder may use the credential at all. */
  function mayUse(token: Token, credential: Credential): boolean {
    if (token.kind === 'client') return credential.userId === undefined;
    if (token.kind === 'credential') return token.grant.credentialId === credential.id;
    return credential.userId === token.userId;
  }

  function checkSecrets(credential: Credential, authData: { pin?: string; otp?: string }): void {
    if (credential.pin !== undefined && authData.pin !== credential.pin) throw new OAuthError(400, 'access_denied', 'Invalid PIN');
    if (credential.otp !== undefined && authData.otp !== credential.otp) throw new OAuthError(400, 'access_denied', 'Invalid OTP');
  }

  function spend(grant: Grant, hashes: Buffer[]): void {
    if (grant.expires < Date.now()) throw new OAuthError(400, 'invalid_request', 'The authorization has expired');
    for (const hash of hashes) {
      if (!grant.hashes.has(hash.toString('hex'))) throw new OAuthError(400, 'invalid_request', 'A hash was not authorized for this credential');
    }
    if (hashes.length > grant.remaining) throw new OAuthError(400, 'invalid_request', 'More signatures than authorized');
    grant.remaining -= hashes.length;
  }

  function newToken(token: Token): { access_token: string; token_type: string; expires_in: number } {
    const accessToken = randomBytes(24).toString('base64url');
    tokens.set(accessToken, token);
    return { access_token: accessToken, token_type: 'Bearer', expires_in: 3600 };
  }

  /** The hashes named at authorize time: the `hashes` parameter, or authorization_details of type credential. */
  function authorizedHashes(params: URLSearchParams): { credentialId: string | undefined; hashes: Buffer[]; numSignatures: number | undefined } {
    let credentialId = params.get('credentialID') ?? undefined;
    let hashes: Buffer[] = [];
    const details = params.get('authorization_details');
    if (details !== null) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(details);
      } catch {
        throw new OAuthError(400, 'invalid_request', 'authorization_details is not JSON');
      }
      const credentialDetail = Array.isArray(parsed) ? parsed.find((item) => item && item.type === 'credential') : undefined;
      if (credentialDetail !== undefined) {
        credentialId = typeof credentialDetail.credentialID === 'string' ? credentialDetail.credentialID : credentialId;
        const digests = Array.isArray(credentialDetail.documentDigests) ? credentialDetail.documentDigests.map((item: { hash?: unknown }) => item?.hash) : [];
        hashes = hashesOf(digests, 'documentDigests');
      }
    }
    const listed = params.get('hashes');
    if (hashes.length === 0 && listed !== null) hashes = hashesOf(listed.split(','), 'hashes');
    const numSignatures = params.get('numSignatures');
    return { credentialId, hashes, numSignatures: numSignatures === null ? undefined : Number(numSignatures) };
  }

  function authorizePage(params: URLSearchParams, user: User | undefined, credential: Credential | undefined): string {
    const hidden = [...params.entries()].map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`).join('\n');
    const needsOtp = credential !== undefined ? credential.otp !== undefined : user?.otp !== undefined;
    const { hashes } = authorizedHashes(params);
    return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test Trust Service: authorize</title></head>
<body>
<h1>Test Trust Service</h1>
<p>${escapeHtml(params.get('client_id') ?? '')} asks to ${params.get('scope') === 'credential' ? `sign ${hashes.length} document hash(es) with your certificate` : 'use your signing credentials'}.</p>
<form method="post" action="authorize">
${hidden}
${user === undefined ? '<label>Email <input name="username" autocomplete="username"></label>' : `<p>Signing as <strong>${escapeHtml(user.name)}</strong></p>`}
<label>PIN <input name="pin" type="password" autocomplete="off"></label>
${needsOtp ? '<label>One-time password <input name="otp" autocomplete="one-time-code"></label>' : ''}
<button type="submit" name="consent" value="yes">Authorize</button>
<button type="submit" name="consent" value="no">Cancel</button>
</form>
</body></html>`;
  }

  function redirectWith(response: http.ServerResponse, redirectUri: string, values: Record<string, string>): void {
    const url = new URL(redirectUri);
    for (const [name, value] of Object.entries(values)) url.searchParams.set(name, value);
    response.writeHead(302, { location: url.toString() }).end();
  }

  /** The authorize request's client and redirect: errors here are shown, never redirected (RFC 6749 §4.1.2.1). */
  function checkedRedirect(params: URLSearchParams): string {
    if (params.get('client_id') !== clientId) throw new OAuthError(400, 'unauthorized_client', 'Unknown client_id');
    const redirectUri = params.get('redirect_uri') ?? '';
    try {
      const url = new URL(redirectUri);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme');
    } catch {
      throw new OAuthError(400, 'invalid_request', 'Invalid redirect_uri');
    }
    if (params.get('response_type') !== 'code') throw new OAuthError(400, 'unsupported_response_type', 'response_type must be code');
    return redirectUri;
  }

  function userOfAuthorization(params: URLSearchParams, form: URLSearchParams | undefined): { user: User | undefined; credential: Credential | undefined } {
    const { credentialId } = authorizedHashes(params);
    if (params.get('scope') === 'credential' || credentialId !== undefined) {
      const credential = credentialId !== undefined ? credentials.get(credentialId) : undefined;
      if (credential === undefined || credential.userId === undefined) throw new OAuthError(400, 'invalid_request', 'Invalid parameter credentialID');
      return { user: users.get(credential.userId), credential };
    }
    const username = form?.get('username') ?? undefined;
    return { user: username === undefined ? undefined : [...users.values()].find((candidate) => candidate.email === username || candidate.id === username), credential: undefined };
  }

  function authorizeSubmit(form: URLSearchParams, response: http.ServerResponse): void {
    const redirectUri = checkedRedirect(form);
    const state = form.get('state') ?? '';
    const fail = (error: string, description: string) => redirectWith(response, redirectUri, { error, error_description: description, ...(state ? { state } : {}) });
    if (form.get('consent') === 'no') return fail('access_denied', 'The user declined');
    const scope = form.get('scope') === 'credential' ? 'credential' : 'service';
    let found: { user: User | undefined; credential: Credential | undefined };
    try {
      found = userOfAuthorization(form, form);
    } catch (error) {
      if (error instanceof OAuthError) return fail(error.error, error.description);
      throw error;
    }
    const { user, credential } = found;
    if (user === undefined) return fail('access_denied', 'Unknown user');
    const pin = form.get('pin') ?? '';
    if (pin !== (credential?.pin ?? user.pin)) return fail('access_denied', 'Invalid PIN');
    const otp = credential?.otp ?? user.otp;
    if (otp !== undefined && form.get('otp') !== otp) return fail('access_denied', 'Invalid OTP');
    let grant: Grant | undefined;
    if (scope === 'credential') {
      const { hashes, numSignatures } = authorizedHashes(form);
      if (hashes.length === 0) return fail('invalid_request', 'A credential authorization names the hashes to sign');
      if (numSignatures !== undefined && numSignatures !== hashes.length) return fail('invalid_request', 'numSignatures does not match the hashes');
      if (credential!.disabled) return fail('access_denied', 'The credential is disabled');
      grant = { credentialId: credential!.id, hashes: new Set(hashes.map((hash) => hash.toString('hex'))), remaining: hashes.length, expires: Date.now() + 10 * 60_000 };
    }
    const code = randomBytes(18).toString('base64url');
    codes.set(code, {
      clientId,
      redirectUri,
      userId: user.id,
      scope,
      ...(grant !== undefined ? { grant } : {}),
      ...(form.get('code_challenge') !== null ? { codeChallenge: form.get('code_challenge')! } : {}),
      expires: Date.now() + 5 * 60_000,
    });
    redirectWith(response, redirectUri, { code, ...(state ? { state } : {}) });
  }

  function tokenGrant(body: Record<string, string>): Record<string, unknown> {
    if (body.client_id !== clientId || body.client_secret !== clientSecret) throw new OAuthError(401, 'invalid_client', 'Invalid client credentials');
    if (body.grant_type === 'client_credentials') return newToken({ kind: 'client' });
    if (body.grant_type !== 'authorization_code') throw new OAuthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code or client_credentials');
    const code = codes.get(body.code ?? '');
    codes.delete(body.code ?? '');
    if (code === undefined || code.expires < Date.now()) throw new OAuthError(400, 'invalid_grant', 'Invalid or expired code');
    if (code.redirectUri !== body.redirect_uri) throw new OAuthError(400, 'invalid_grant', 'redirect_uri does not match');
    if (
      code.codeChallenge !== undefined &&
      createHash('sha256')
        .update(body.code_verifier ?? '')
        .digest('base64url') !== code.codeChallenge
    ) {
      throw new OAuthError(400, 'invalid_grant', 'code_verifier does not match');
    }
    if (code.scope === 'credential') return { ...newToken({ kind: 'credential', userId: code.userId, grant: code.grant! }), credentialID: code.grant!.credentialId };
    return newToken({ kind: 'user', userId: code.userId });
  }

  function credentialInfo(credential: Credential): Record<string, unknown> {
    const certificate = credential.certificate;
    return {
      description: credential.description,
      signatureQualifier:
        credential.level === 'qualified' ? (credential.userId === undefined ? 'eu_eidas_qeseal' : 'eu_eidas_qes') : credential.userId === undefined ? 'eu_eidas_aeseal' : 'eu_eidas_aes',
      key: { status: credential.disabled ? 'disabled' : 'enabled', algo: ['1.2.840.113549.1.1.1'], len: 2048 },
      cert: {
        status: credential.revoked ? 'revoked' : 'valid',
        certificates: credential.certificates.map((der) => der.toString('base64')),
        issuerDN: certificate.issuer.replace(/\n/g, ', '),
        serialNumber: certificate.serialNumber,
        subjectDN: certificate.subject.replace(/\n/g, ', '),
        validFrom: certificate.validFrom,
        validTo: certificate.validTo,
      },
      auth: {
        mode: credential.authMode,
        ...(credential.authMode === 'explicit'
          ? {
              objects: [
                ...(credential.pin !== undefined ? [{ type: 'Password', id: 'PIN', format: 'N', label: 'PIN' }] : []),
                ...(credential.otp !== undefined ? [{ type: 'OTP', id: 'OTP', format: 'N', label: 'One-time password', generator: 'totp' }] : []),
              ],
            }
          : {}),
      },
      SCAL: '2',
      multisign: 100,
      lang: 'en-US',
    };
  }

  function api(operation: string, request: http.IncomingMessage, body: Record<string, unknown>): Record<string, unknown> {
    switch (operation) {
      case 'info':
        return {
          specs: '2.0.0.2',
          name: options.name ?? 'Test Trust Service',
          logo: '',
          region: 'EU',
          lang: 'en-US',
          description: 'A CSC v2 provider for tests',
          authType: ['oauth2code', 'oauth2client'],
          methods: ['oauth2/authorize', 'oauth2/token', 'credentials/list', 'credentials/info', 'credentials/authorize', 'signatures/signHash'],
        };
      case 'credentials/list': {
        const token = tokenOf(request);
        const ids = [...credentials.values()]
          .filter((credential) => mayUse(token, credential) && (body.onlyValid !== true || (!credential.revoked && !credential.disabled)))
          .map((credential) => credential.id);
        return { credentialIDs: ids, onlyValid: body.onlyValid === true };
      }
      case 'credentials/info': {
        const token = tokenOf(request);
        const credential = credentialOf(body.credentialID);
        if (!mayUse(token, credential)) throw new OAuthError(400, 'invalid_request', 'Invalid parameter credentialID');
        return credentialInfo(credential);
      }
      case 'credentials/authorize': {
        const token = tokenOf(request);
        const credential = credentialOf(body.credentialID);
        if (!mayUse(token, credential)) throw new OAuthError(400, 'invalid_request', 'Invalid parameter credentialID');
        if (credential.disabled) throw new OAuthError(400, 'invalid_request', 'The credential is disabled');
        const hashes = hashesOf(body.hashes, 'hashes');
        const authData = Array.isArray(body.authData) ? (body.authData as { id?: unknown; value?: unknown }[]) : [];
        const valueOf = (id: string) => {
          const found = authData.find((item) => item?.id === id)?.value;
          return typeof found === 'string' ? found : undefined;
        };
        checkSecrets(credential, { pin: valueOf('PIN'), otp: valueOf('OTP') });
        if (body.numSignatures !== undefined && body.numSignatures !== hashes.length) throw new OAuthError(400, 'invalid_request', 'numSignatures does not match the hashes');
        const sad = randomBytes(24).toString('base64url');
        sads.set(sad, { credentialId: credential.id, hashes: new Set(hashes.map((hash) => hash.toString('hex'))), remaining: hashes.length, expires: Date.now() + 5 * 60_000 });
        return { SAD: sad, expiresIn: 300 };
      }
      case 'signatures/signHash': {
        const token = tokenOf(request);
        const credential = credentialOf(body.credentialID);
        if (!mayUse(token, credential)) throw new OAuthError(400, 'invalid_request', 'Invalid parameter credentialID');
        const hashes = hashesOf(body.hashes, 'hashes');
        const hashAlgorithm = typeof body.hashAlgorithmOID === 'string' ? body.hashAlgorithmOID : SHA256_OID;
        const digestInfo = DIGEST_INFO_PREFIXES[hashAlgorithm];
        if (digestInfo === undefined) throw new OAuthError(400, 'invalid_request', 'Invalid parameter hashAlgorithmOID');
        if (typeof body.signAlgo !== 'string' || !SIGN_ALGORITHMS.has(body.signAlgo)) throw new OAuthError(400, 'invalid_request', 'Invalid parameter signAlgo');
        if (hashes.some((hash) => hash.length !== digestInfo.length)) throw new OAuthError(400, 'invalid_request', 'A hash has the wrong length for hashAlgorithmOID');
        if (credential.disabled) throw new OAuthError(400, 'invalid_request', 'The credential is disabled');
        if (typeof body.SAD === 'string') {
          const grant = sads.get(body.SAD);
          if (grant === undefined || grant.credentialId !== credential.id) throw new OAuthError(400, 'invalid_request', 'Invalid SAD');
          spend(grant, hashes);
        } else if (token.kind === 'credential') {
          spend(token.grant, hashes);
        } else if (credential.authMode !== 'implicit') {
          throw new OAuthError(400, 'invalid_request', 'Missing (or invalid type) string parameter SAD');
        }
        credential.signed += hashes.length;
        const signatures = hashes.map((hash) =>
          privateEncrypt({ key: credential.key, padding: constants.RSA_PKCS1_PADDING }, Buffer.concat([Buffer.from(digestInfo.prefix, 'hex'), hash])).toString('base64'),
        );
        return { signatures };
      }
      default:
        throw new OAuthError(404, 'invalid_request', `No such operation ${operation}`);
    }
  }

  function answerJson(response: http.ServerResponse, status: number, value: unknown): void {
    response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(value));
  }

  async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    if (down === 'hang') {
      hanging.add(response);
      return;
    }
    if (slowMs > 0) await new Promise((resolve) => setTimeout(resolve, slowMs));
    const url = new URL(request.url ?? '/', 'http://provider');
    const match = /^\/csc\/v2\/(.+)$/.exec(url.pathname);
    const operation = match?.[1] ?? '';
    counts.set(operation, (counts.get(operation) ?? 0) + 1);
    try {
      if (operation === 'oauth2/authorize' && request.method === 'GET') {
        checkedRedirect(url.searchParams);
        const { user, credential } = userOfAuthorization(url.searchParams, undefined);
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(authorizePage(url.searchParams, user, credential));
        return;
      }
      if (request.method !== 'POST') throw new OAuthError(405, 'invalid_request', 'POST only');
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      const isForm = (request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
      if (operation === 'oauth2/authorize') {
        authorizeSubmit(new URLSearchParams(text), response);
        return;
      }
      let body: Record<string, unknown>;
      if (isForm) body = Object.fromEntries(new URLSearchParams(text));
      else {
        try {
          body = text.length === 0 ? {} : JSON.parse(text);
        } catch {
          throw new OAuthError(400, 'invalid_request', 'The body is not JSON');
        }
      }
      if (operation === 'oauth2/token') {
        answerJson(response, 200, tokenGrant(body as Record<string, string>));
        return;
      }
      const answer = api(operation, request, body);
      if (holding === operation) {
        await new Promise<void>((resolve) => heldAnswers.push(resolve));
        if (response.destroyed || request.socket.destroyed) return;
      }
      answerJson(response, 200, answer);
    } catch (error) {
      if (error instanceof OAuthError) answerJson(response, error.status, { error: error.error, error_description: error.description });
      else answerJson(response, 500, { error: 'server_error', error_description: (error as Error).message });
    }
  }

  const sockets = new Set<Socket>();
  const server = http.createServer((request, response) => {
    handle(request, response).catch((error) => {
      if (!response.headersSent) answerJson(response, 500, { error: 'server_error', error_description: String(error) });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const stopListening = async () => {
    if (!server.listening) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  return {
    baseUrl: `http://127.0.0.1:${port}/csc/v2`,
    clientId,
    clientSecret,
    caCertPem,
    caCertPath: ca.caCertPath,
    ocspUrl: responder.url,
    addUser(user) {
      const userId = randomUUID();
      users.set(userId, { id: userId, name: user.name, email: user.email, pin: user.pin, otp: user.otp });
      const issued = issue(`/CN=${subjectValue(user.name)}/emailAddress=${subjectValue(user.email)}`, user.level, 'esign', user.email);
      const credentialId = randomUUID();
      credentials.set(credentialId, {
        id: credentialId,
        userId,
        level: user.level,
        authMode: user.authMode ?? 'oauth2code',
        pin: user.pin,
        otp: user.otp,
        ...issued,
        revoked: false,
        disabled: false,
        signed: 0,
        description: `${user.level === 'qualified' ? 'Qualified' : 'Advanced'} signature of ${user.name}`,
      });
      return { credentialId, userId, certificatePem: issued.certificate.toString() };
    },
    addSeal(seal) {
      const level = seal.level ?? 'advanced';
      const issued = issue(`/CN=${subjectValue(seal.name)}/O=${subjectValue(seal.name)}`, level, 'eseal');
      const credentialId = randomUUID();
      credentials.set(credentialId, {
        id: credentialId,
        userId: undefined,
        level,
        authMode: seal.pin === undefined ? 'implicit' : 'explicit',
        pin: seal.pin,
        otp: undefined,
        ...issued,
        revoked: false,
        disabled: false,
        signed: 0,
        description: `Seal of ${seal.name}`,
      });
      return { credentialId, certificatePem: issued.certificate.toString() };
    },
    revoke(credentialId) {
      const credential = credentialOf(credentialId);
      credential.revoked = true;
      ca.revoke(credential.serialHex);
    },
    disable(credentialId, disabled = true) {
      credentialOf(credentialId).disabled = disabled;
    },
    async setDown(value, mode = 'refused') {
      if (value) {
        down = mode;
        if (mode === 'refused') await stopListening();
        return;
      }
      down = false;
      // Those left hanging see their connection end, as when a stalled provider is restarted.
      for (const response of hanging) response.destroy();
      hanging.clear();
      if (!server.listening) await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    setSlow(ms) {
      slowMs = ms;
    },
    holdAnswers(operation) {
      holding = operation;
    },
    heldAnswers() {
      return heldAnswers.length;
    },
    releaseAnswers() {
      for (const send of heldAnswers.splice(0)) send();
    },
    expireTokens() {
      tokens.clear();
    },
    signedCount(credentialId) {
      return credentials.get(credentialId)?.signed ?? 0;
    },
    requests(operation) {
      return counts.get(operation) ?? 0;
    },
    async close() {
      holding = undefined;
      for (const send of heldAnswers.splice(0)) send();
      for (const response of hanging) response.destroy();
      hanging.clear();
      await stopListening();
      await responder.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
