import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createOpensslCa } from './openssl-ca.ts';

/** Debian's softhsm2 module (the package `softhsm2`; .ci/run installs it). */
export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';

/**
 * A SoftHSM token of its own in a temporary directory (its own softhsm2.conf, which
 * `SOFTHSM2_CONF` must name in every process that loads the module), holding an RSA seal key and
 * its certificate issued by a local CA made with openssl (test/helpers/openssl-ca.ts), both under
 * `keyLabel` with CKA_ID 01, and the CA's certificate (label `ca`). The key is made by openssl and
 * imported with pkcs11-tool (opensc), as an operator moves an existing key onto an HSM; the
 * service only ever reaches it through C_Sign.
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
  const ca = createOpensslCa({ directory, subject: '/CN=Token Test CA' });
  const seal = ca.issue({
    name: 'seal',
    subject: `/CN=${options.commonName}/O=Envelope Service Test`,
    serialHex: '1001',
    days: 20,
    extensions: ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature,nonRepudiation'],
  });
  ca.run('pkcs8', '-topk8', '-nocrypt', '-in', seal.keyPath, '-outform', 'DER', '-out', file('seal.key.der'));
  ca.run('x509', '-in', seal.certPath, '-outform', 'DER', '-out', file('seal.der'));
  ca.run('x509', '-in', ca.caCertPath, '-outform', 'DER', '-out', file('ca.der'));
  const tool = (...args: string[]) => run('pkcs11-tool', ['--module', SOFTHSM_MODULE, '--token-label', options.label, '--login', '--pin', options.pin, ...args]);
  tool('--write-object', file('seal.key.der'), '--type', 'privkey', '--label', options.keyLabel, '--id', '01');
  tool('--write-object', file('seal.der'), '--type', 'cert', '--label', options.keyLabel, '--id', '01');
  tool('--write-object', file('ca.der'), '--type', 'cert', '--label', 'ca', '--id', '02');
  // The key exists only on the token from here on.
  fs.rmSync(seal.keyPath);
  fs.rmSync(file('seal.key.der'));
  fs.rmSync(ca.caKeyPath);
  return {
    directory,
    confPath,
    tokensPath: tokens,
    sealCertificatePem: fs.readFileSync(seal.certPath, 'utf8'),
    caCertificatePem: fs.readFileSync(ca.caCertPath, 'utf8'),
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
