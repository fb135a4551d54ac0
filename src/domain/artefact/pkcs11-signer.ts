/**
 * SEAL_SIGNER=pkcs11: the seal's key on a token behind a PKCS#11 module (an HSM, a smart card,
 * SoftHSM). The private key never enters the process: each seal sends the token a DigestInfo
 * (the SHA-256 of the CMS's signed attributes) and C_Sign answers the signature (CKM_RSA_PKCS).
 *
 * Sessions: a PKCS#11 session runs one operation at a time, so signatures take an idle session
 * from a small pool (opened on demand, up to `MAX_SESSIONS`); the login is the token's and
 * covers them all. Other processes (instances sharing the token) have their own sessions: the
 * module arbitrates. When the token stops answering (removed, the module restarted) every session
 * is dropped and the next signature connects again, so a token that comes back is used without a
 * restart; meanwhile signing fails with `Seal.SignerUnavailable` and the seal job retries.
 */
import { constants, createHash, publicDecrypt, randomBytes, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import pkcs11js from 'pkcs11js';
import type { Pkcs11SignerConfig } from '../../config.ts';
import { digestInfoOf, type SealSigner, SealSignerUnavailableError } from './seal-signer.ts';

const MAX_SESSIONS = 4;

/** A start-up problem, one line naming the variable to fix. */
export class Pkcs11SetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Pkcs11SetupError';
  }
}

type Handle = Buffer;

/**
 * A module is loaded once per process: its library is one shared object whatever loads it, and
 * C_Finalize ends it for everyone, so the last user finalizes it (a seal opened for the command
 * line, or a failed start-up check, must not end the running seal's sessions).
 */
/**
 * C_Sign runs on libuv's threads (pkcs11js's callback form), several at once on different
 * sessions: the module must lock for itself (CKF_OS_LOCKING_OK). Initialised with no arguments a
 * module may assume one thread, and SoftHSM then corrupts its heap under concurrent signing.
 */
const THREADED = { flags: pkcs11js.CKF_OS_LOCKING_OK };

const loadedModules = new Map<string, { module: pkcs11js.PKCS11; users: number }>();

function loadModule(modulePath: string): pkcs11js.PKCS11 {
  const loaded = loadedModules.get(modulePath);
  if (loaded !== undefined) {
    loaded.users += 1;
    return loaded.module;
  }
  const module = new pkcs11js.PKCS11();
  try {
    module.load(modulePath);
  } catch (error) {
    throw new Pkcs11SetupError(`PKCS11_MODULE: cannot load ${modulePath} (${(error as Error).message.split('\n')[0]})`);
  }
  try {
    module.C_Initialize(THREADED);
  } catch (error) {
    if (codeOf(error) !== 'CKR_CRYPTOKI_ALREADY_INITIALIZED') throw new Pkcs11SetupError(`PKCS11_MODULE: ${modulePath} did not initialise (${describe(error)})`);
  }
  loadedModules.set(modulePath, { module, users: 1 });
  return module;
}

/** C_Finalize and C_Initialize again: every session of the process ends (other users reconnect on their next signature). */
function reinitializeModule(modulePath: string): void {
  const loaded = loadedModules.get(modulePath);
  if (loaded === undefined) return;
  try {
    loaded.module.C_Finalize();
  } catch {
    // Not initialised any more: initialising is what is wanted.
  }
  try {
    loaded.module.C_Initialize(THREADED);
  } catch (error) {
    throw new Error(`${modulePath} could not be initialised again to look for the token (${describe(error)})`);
  }
}

function releaseModule(modulePath: string): void {
  const loaded = loadedModules.get(modulePath);
  if (loaded === undefined) return;
  loaded.users -= 1;
  if (loaded.users > 0) return;
  loadedModules.delete(modulePath);
  try {
    loaded.module.C_Finalize();
  } catch {
    // Already finalized, or the module is gone: nothing left to release.
  }
}

/** The `CKR_…` name of a module error (pkcs11js puts it in the message). */
function codeOf(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : String(error);
  return /\bCKR_[A-Z_]+/.exec(message)?.[0];
}

function describe(error: unknown): string {
  return codeOf(error) ?? (error instanceof Error ? error.message : String(error));
}

function label(value: string): string {
  // Token labels are 32 bytes padded with spaces.
  return value.replace(/[\s\0]+$/, '');
}

type Connection = { slot: Handle; key: Handle; idle: Handle[]; open: number };

export type Pkcs11Seal = {
  signer: SealSigner;
  /** DER certificates, the signer's first (from SEAL_CERT_CHAIN or the token). */
  certificates: Uint8Array[];
};

/**
 * Loads the module, finds the token and the key, logs in, reads the certificate chain and signs a
 * probe that must verify under the certificate. Any failure is a `Pkcs11SetupError` naming the
 * variable (a wrong PIN, no such token or key, a module that does not load).
 */
export async function openPkcs11Seal(config: Pkcs11SignerConfig): Promise<Pkcs11Seal> {
  let pin: string;
  if ('value' in config.pin) pin = config.pin.value;
  else {
    try {
      pin = fs.readFileSync(config.pin.file, 'utf8').split(/\r?\n/)[0] ?? '';
    } catch (error) {
      throw new Pkcs11SetupError(`PKCS11_PIN_FILE: cannot read ${config.pin.file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
  }
  const module = loadModule(config.modulePath);
  const finalize = () => releaseModule(config.modulePath);
  let connection: Connection;
  try {
    connection = connect(module, config, pin, 'setup');
  } catch (error) {
    finalize();
    throw error;
  }
  const session = connection.idle[0]!;
  let certificates: Uint8Array[];
  try {
    certificates = config.certificateChainPath !== undefined ? chainFromPem(config.certificateChainPath) : chainFromToken(module, session, connection.key, config.keyLabel);
    // The probe: the key signs, and the certificate we will put in every seal verifies it.
    const digest = createHash('sha256').update(randomBytes(32)).digest();
    module.C_SignInit(session, { mechanism: pkcs11js.CKM_RSA_PKCS }, connection.key);
    const signature = module.C_Sign(session, digestInfoOf(digest), Buffer.alloc(1024));
    const signerCertificate = new X509Certificate(certificates[0]!);
    const certificateSource = config.certificateChainPath !== undefined ? 'SEAL_CERT_CHAIN' : 'PKCS11_KEY_LABEL';
    if (!signs(signerCertificate, digest, signature)) {
      throw new Pkcs11SetupError(
        `${certificateSource}: the certificate (${signerCertificate.subject.replace(/\n/g, ', ')}) does not match the key "${config.keyLabel}" (the probe signature does not verify under it)`,
      );
    }
  } catch (error) {
    // Its session too: another seal of this process may keep the module loaded.
    closeQuietly(module, session);
    finalize();
    if (error instanceof Pkcs11SetupError) throw error;
    throw new Pkcs11SetupError(`PKCS11_KEY_LABEL: signing the start-up probe with "${config.keyLabel}" failed (${describe(error)})`);
  }

  let current: Connection | undefined = connection;
  let closed = false;
  /** Signatures waiting for a session; given `undefined` when the sessions were dropped, to start over. */
  let waiting: ((session: Handle | undefined) => void)[] = [];

  /** Drops every session: the next signature connects again. */
  function reset(): void {
    const dropped = current;
    current = undefined;
    const stranded = waiting;
    waiting = [];
    // Those waiting for a session of the dropped connection start over (and connect again).
    for (const wake of stranded) wake(undefined);
    if (dropped === undefined) return;
    try {
      module.C_CloseAllSessions(dropped.slot);
    } catch {
      // The slot is gone with its token: its sessions are too.
    }
  }

  async function take(): Promise<{ connection: Connection; session: Handle }> {
    if (current === undefined) {
      try {
        current = connect(module, config, pin, 'runtime');
      } catch {
        // Many modules (SoftHSM among them) list their tokens once, at C_Initialize: a token that
        // was removed and put back is seen only by a module initialised again.
        try {
          reinitializeModule(config.modulePath);
          current = connect(module, config, pin, 'runtime');
        } catch (error) {
          throw new SealSignerUnavailableError(error instanceof Error ? error.message : String(error), codeOf(error));
        }
      }
    }
    const active = current;
    const idle = active.idle.pop();
    if (idle !== undefined) return { connection: active, session: idle };
    if (active.open < MAX_SESSIONS) {
      active.open += 1;
      try {
        return { connection: active, session: module.C_OpenSession(active.slot, pkcs11js.CKF_SERIAL_SESSION) };
      } catch (error) {
        active.open -= 1;
        throw error;
      }
    }
    const handed = await new Promise<Handle | undefined>((resolve) => waiting.push(resolve));
    return handed === undefined ? take() : { connection: active, session: handed };
  }

  function give(connection: Connection, session: Handle): void {
    if (connection !== current) return;
    const next = waiting.shift();
    if (next !== undefined) next(session);
    else connection.idle.push(session);
  }

  const signer: SealSigner = {
    kind: 'pkcs11',
    async signDigest(digest) {
      if (closed) throw new SealSignerUnavailableError('the signer was closed (the service is stopping)');
      const data = digestInfoOf(digest);
      let taken: { connection: Connection; session: Handle };
      try {
        taken = await take();
      } catch (error) {
        if (error instanceof SealSignerUnavailableError) throw error;
        reset();
        throw new SealSignerUnavailableError(describe(error), codeOf(error));
      }
      try {
        module.C_SignInit(taken.session, { mechanism: pkcs11js.CKM_RSA_PKCS }, taken.connection.key);
        // The callback form runs C_Sign off the event loop: a network HSM may take tens of ms.
        const signature = await new Promise<Buffer>((resolve, reject) => {
          module.C_Sign(taken.session, data, Buffer.alloc(1024), (error, result) => (error ? reject(error) : resolve(result)));
        });
        give(taken.connection, taken.session);
        return new Uint8Array(signature);
      } catch (error) {
        // A session or key handle that no longer works: the token went away or was replaced.
        reset();
        throw new SealSignerUnavailableError(`token "${tokenName(config)}": ${describe(error)}`, codeOf(error));
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      reset();
      finalize();
    },
  };
  return { signer, certificates };
}

function tokenName(config: Pkcs11SignerConfig): string {
  return 'label' in config.token ? config.token.label : `slot ${config.token.slot}`;
}

/** Whether `signature` is the PKCS#1 v1.5 signature of `digest` under the certificate's key (its public operation gives back the DigestInfo). */
function signs(certificate: X509Certificate, digest: Uint8Array, signature: Buffer): boolean {
  try {
    return publicDecrypt({ key: certificate.publicKey, padding: constants.RSA_PKCS1_PADDING }, signature).equals(digestInfoOf(digest));
  } catch {
    return false;
  }
}

/** Finds the slot, opens a session, logs in and finds the key. `setup` errors name the variable to fix. */
function connect(module: pkcs11js.PKCS11, config: Pkcs11SignerConfig, pin: string, phase: 'setup' | 'runtime'): Connection {
  const fail = (message: string) => (phase === 'setup' ? new Pkcs11SetupError(message) : new Error(message));
  let slots: Handle[];
  try {
    slots = module.C_GetSlotList(true);
  } catch (error) {
    throw fail(`PKCS11_MODULE: listing the module's slots failed (${describe(error)})`);
  }
  let slot: Handle | undefined;
  if ('label' in config.token) {
    const wanted = config.token.label;
    const labels: string[] = [];
    for (const candidate of slots) {
      try {
        const found = label(module.C_GetTokenInfo(candidate).label);
        labels.push(found);
        if (found === wanted && slot === undefined) slot = candidate;
      } catch {
        // A slot whose token went away between the listing and now.
      }
    }
    if (slot === undefined)
      throw fail(`PKCS11_TOKEN_LABEL: no token labelled "${wanted}" in ${config.modulePath} (tokens: ${labels.length === 0 ? 'none' : labels.map((name) => `"${name}"`).join(', ')})`);
  } else {
    const wanted = BigInt(config.token.slot);
    slot = slots.find((candidate) => candidate.readBigUInt64LE(0) === wanted);
    if (slot === undefined)
      throw fail(
        `PKCS11_SLOT: no slot ${config.token.slot} with a token in ${config.modulePath} (slots: ${slots.map((candidate) => candidate.readBigUInt64LE(0).toString()).join(', ') || 'none'})`,
      );
  }
  let session: Handle;
  try {
    session = module.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION);
  } catch (error) {
    throw fail(`PKCS11_TOKEN_LABEL: opening a session on token "${tokenName(config)}" failed (${describe(error)})`);
  }
  try {
    module.C_Login(session, pkcs11js.CKU_USER, pin);
  } catch (error) {
    const code = codeOf(error);
    if (code !== 'CKR_USER_ALREADY_LOGGED_IN') {
      closeQuietly(module, session);
      const variable = 'value' in config.pin ? 'PKCS11_PIN' : 'PKCS11_PIN_FILE';
      if (code === 'CKR_PIN_INCORRECT') throw fail(`${variable}: token "${tokenName(config)}" refused the PIN (CKR_PIN_INCORRECT)`);
      if (code === 'CKR_PIN_LOCKED')
        throw fail(`${variable}: token "${tokenName(config)}" has locked its PIN after too many wrong tries (CKR_PIN_LOCKED); its security officer must unlock it`);
      throw fail(`${variable}: logging in to token "${tokenName(config)}" failed (${code ?? describe(error)})`);
    }
  }
  const keys = findObjects(module, session, [
    { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY },
    { type: pkcs11js.CKA_LABEL, value: config.keyLabel },
  ]);
  if (keys.length === 0) {
    closeQuietly(module, session);
    throw fail(`PKCS11_KEY_LABEL: no private key labelled "${config.keyLabel}" on token "${tokenName(config)}"`);
  }
  if (keys.length > 1) {
    closeQuietly(module, session);
    throw fail(`PKCS11_KEY_LABEL: ${keys.length} private keys are labelled "${config.keyLabel}" on token "${tokenName(config)}"; give the seal's key a label of its own`);
  }
  const key = keys[0]!;
  const [keyType] = module.C_GetAttributeValue(session, key, [{ type: pkcs11js.CKA_KEY_TYPE }]);
  if (keyType?.value instanceof Buffer && keyType.value.readBigUInt64LE(0) !== BigInt(pkcs11js.CKK_RSA)) {
    closeQuietly(module, session);
    throw fail(`PKCS11_KEY_LABEL: the key "${config.keyLabel}" is not an RSA key (the seal signs with RSA PKCS#1 v1.5)`);
  }
  return { slot, key, idle: [session], open: 1 };
}

function closeQuietly(module: pkcs11js.PKCS11, session: Handle): void {
  try {
    module.C_CloseSession(session);
  } catch {
    // Nothing to release.
  }
}

function findObjects(module: pkcs11js.PKCS11, session: Handle, template: pkcs11js.Template): Handle[] {
  module.C_FindObjectsInit(session, template);
  try {
    return module.C_FindObjects(session, 16);
  } finally {
    module.C_FindObjectsFinal(session);
  }
}

/**
 * The key's certificate on the token (the certificate with the key's CKA_ID, else its label),
 * then every other certificate there that issued one already in the chain.
 */
function chainFromToken(module: pkcs11js.PKCS11, session: Handle, key: Handle, keyLabel: string): Uint8Array[] {
  const [idAttribute] = module.C_GetAttributeValue(session, key, [{ type: pkcs11js.CKA_ID }]);
  const all = findObjects(module, session, [{ type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_CERTIFICATE }]).map((handle) => {
    const [value, id, objectLabel] = module.C_GetAttributeValue(session, handle, [{ type: pkcs11js.CKA_VALUE }, { type: pkcs11js.CKA_ID }, { type: pkcs11js.CKA_LABEL }]);
    return { der: value!.value as Buffer, id: id!.value as Buffer, label: (objectLabel!.value as Buffer).toString('utf8') };
  });
  const keyId = idAttribute?.value as Buffer | undefined;
  const own = all.find((entry) => keyId !== undefined && keyId.length > 0 && entry.id.equals(keyId)) ?? all.find((entry) => entry.label === keyLabel);
  if (own === undefined)
    throw new Pkcs11SetupError(`PKCS11_KEY_LABEL: no certificate for the key "${keyLabel}" on the token (none with its CKA_ID or label); import it, or name a PEM chain in SEAL_CERT_CHAIN`);
  return orderedChain(
    own.der,
    all.filter((entry) => entry !== own).map((entry) => entry.der),
    'PKCS11_KEY_LABEL',
  );
}

function chainFromPem(filePath: string): Uint8Array[] {
  let text: string;
  try {
    text = fs.readFileSync(filePath, 'utf8');
  } catch (error) {
    throw new Pkcs11SetupError(`SEAL_CERT_CHAIN: cannot read ${filePath} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  const ders = [...text.matchAll(/-----BEGIN CERTIFICATE-----([^-]+)-----END CERTIFICATE-----/g)].map((match) => Buffer.from(match[1]!.replace(/\s+/g, ''), 'base64'));
  if (ders.length === 0) throw new Pkcs11SetupError(`SEAL_CERT_CHAIN: ${filePath} holds no PEM certificate`);
  return orderedChain(ders[0]!, ders.slice(1), 'SEAL_CERT_CHAIN');
}

/** The signer's certificate, then its issuer, its issuer's issuer… among `others` (the rest dropped: a seal carries its chain, not the token's every certificate). */
function orderedChain(signerDer: Buffer, others: Buffer[], variable: string): Uint8Array[] {
  let signer: X509Certificate;
  try {
    signer = new X509Certificate(signerDer);
  } catch (error) {
    throw new Pkcs11SetupError(`${variable}: the seal's certificate cannot be read (${(error as Error).message})`);
  }
  const chain = [signer];
  const candidates = others.flatMap((der) => {
    try {
      return [new X509Certificate(der)];
    } catch {
      return [];
    }
  });
  for (;;) {
    const last = chain[chain.length - 1]!;
    if (last.checkIssued(last)) break;
    const issuer = candidates.find((candidate) => !chain.includes(candidate) && last.checkIssued(candidate) && last.verify(candidate.publicKey));
    if (issuer === undefined) break;
    chain.push(issuer);
  }
  return chain.map((certificate) => new Uint8Array(certificate.raw));
}
