import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createOpensslCa, startOcspResponder } from './openssl-ca.ts';

/**
 * A local certification authority with an OCSP responder (`openssl ocsp` answering each request,
 * behind node:http on the loopback), and a sealing certificate it issued whose AIA names that
 * responder, as a PKCS#12 file with the chain (SEAL_P12). The responder can be stopped and started
 * again on the same port, as a responder that is down for a while.
 */
export async function startLocalPki(): Promise<{
  directory: string;
  p12Path: string;
  p12Password: string;
  caPath: string;
  ocspUrl: string;
  /** OCSP requests answered so far. */
  readonly requests: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'pki-'));
  const ca = createOpensslCa({ directory, subject: '/CN=Local Test CA' });
  const responder = await startOcspResponder(ca);
  const ocspUrl = responder.url;
  const seal = ca.issue({
    name: 'seal',
    subject: '/CN=Local Test Seal',
    serialHex: '1001',
    days: 20,
    extensions: ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,nonRepudiation', `authorityInfoAccess=OCSP;URI:${ocspUrl}`],
  });
  const p12Password = 'test-pass';
  const p12Path = path.join(directory, 'seal.p12');
  ca.run('pkcs12', '-export', '-inkey', seal.keyPath, '-in', seal.certPath, '-certfile', ca.caCertPath, '-out', p12Path, '-passout', `pass:${p12Password}`);

  return {
    directory,
    p12Path,
    p12Password,
    caPath: ca.caCertPath,
    ocspUrl,
    get requests() {
      return responder.requests;
    },
    stop: () => responder.stop(),
    start: () => responder.start(),
    async close() {
      await responder.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
