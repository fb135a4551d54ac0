import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Debian's softhsm2 module (the package `softhsm2`; .ci/run installs it). */
export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';

/**
 * A SoftHSM token of its own in a temporary directory (its own softhsm2.conf, which
 * `SOFTHSM2_CONF` must name in every process that loads the module), holding an RSA seal key and
 * its certificate issued by a local CA made with openssl, both under `keyLabel` with CKA_ID 01,
 * and the CA's certificate (label `ca`). The key is made by openssl and imported with
 * pkcs11-tool (opensc), as an operator moves an existing key onto an HSM; the service only ever
 * reaches it through C_Sign.
 */
export function createSoftHsmToken(options: { label: string; pin: string; keyLabel: string; commonName: string }) {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'softhsm-'));
  const tokens = path.join(directory, 'tokens');
  fs.mkdirSync(tokens);
  const confPath = path.join(directory, 'softhsm2.conf');
  fs.writeFileSync(confPath, `directories.tokendir = ${tokens}\nobjectstore.backend = file\nlog.level = ERROR\n`);
  const env = { ...process.env, SOFTHSM2_CONF: confPath };
  const file = (name: string) => path.join(directory, name);
  const run = (command: string, args: string[]) => execFileSync(command, args, { env, cwd: directory, stdio: 'pipe' });
  run('softhsm2-util', ['--init-token', '--free', '--label', options.label, '--pin', options.pin, '--so-pin', `${options.pin}-so`]);
  run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '30',
    '-subj',
    '/CN=Token Test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', file('seal.key'), '-out', file('seal.csr'), '-subj', `/CN=${options.commonName}/O=Envelope Service Test`]);
  fs.writeFileSync(file('seal.ext'), 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,nonRepudiation\n');
  run('openssl', [
    'x509',
    '-req',
    '-in',
    file('seal.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-days',
    '20',
    '-extfile',
    file('seal.ext'),
    '-out',
    file('seal.pem'),
  ]);
  run('openssl', ['pkcs8', '-topk8', '-nocrypt', '-in', file('seal.key'), '-outform', 'DER', '-out', file('seal.key.der')]);
  run('openssl', ['x509', '-in', file('seal.pem'), '-outform', 'DER', '-out', file('seal.der')]);
  run('openssl', ['x509', '-in', file('ca.pem'), '-outform', 'DER', '-out', file('ca.der')]);
  const tool = (...args: string[]) => run('pkcs11-tool', ['--module', SOFTHSM_MODULE, '--token-label', options.label, '--login', '--pin', options.pin, ...args]);
  tool('--write-object', file('seal.key.der'), '--type', 'privkey', '--label', options.keyLabel, '--id', '01');
  tool('--write-object', file('seal.der'), '--type', 'cert', '--label', options.keyLabel, '--id', '01');
  tool('--write-object', file('ca.der'), '--type', 'cert', '--label', 'ca', '--id', '02');
  // The key exists only on the token from here on.
  fs.rmSync(file('seal.key'));
  fs.rmSync(file('seal.key.der'));
  fs.rmSync(file('ca.key'));
  return {
    directory,
    confPath,
    tokensPath: tokens,
    sealCertificatePem: fs.readFileSync(file('seal.pem'), 'utf8'),
    caCertificatePem: fs.readFileSync(file('ca.pem'), 'utf8'),
    /** The environment the service reads for this token (SEAL_SIGNER=pkcs11). */
    serviceEnv: (overrides: Record<string, string> = {}): Record<string, string> => ({
      SEAL_SIGNER: 'pkcs11',
      PKCS11_MODULE: SOFTHSM_MODULE,
      PKCS11_TOKEN_LABEL: options.label,
      PKCS11_PIN: options.pin,
      PKCS11_KEY_LABEL: options.keyLabel,
      ...overrides,
    }),
    remove: () => fs.rmSync(directory, { recursive: true, force: true }),
  };
}
