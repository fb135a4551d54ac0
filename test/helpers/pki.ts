import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

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
  const file = (name: string) => path.join(directory, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore', cwd: directory });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
    '-days',
    '30',
    '-subj',
    '/CN=Local Test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  const state = { requests: 0, counter: 0 };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      state.requests += 1;
      const query = file(`q${++state.counter}.der`);
      const reply = file(`r${state.counter}.der`);
      fs.writeFileSync(query, Buffer.concat(chunks));
      execFile(
        'openssl',
        ['ocsp', '-index', file('index.txt'), '-rsigner', file('ca.crt'), '-rkey', file('ca.key'), '-CA', file('ca.crt'), '-reqin', query, '-respout', reply, '-ndays', '1'],
        { cwd: directory },
        (error) => {
          if (error) {
            response.writeHead(500).end();
            return;
          }
          response.writeHead(200, { 'content-type': 'application/ocsp-response' }).end(fs.readFileSync(reply));
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const ocspUrl = `http://127.0.0.1:${port}/ocsp`;

  fs.writeFileSync(file('seal.ext'), ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,nonRepudiation', `authorityInfoAccess=OCSP;URI:${ocspUrl}`, ''].join('\n'));
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', file('seal.key'), '-out', file('seal.csr'), '-subj', '/CN=Local Test Seal');
  openssl(
    'x509',
    '-req',
    '-in',
    file('seal.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-set_serial',
    '0x1001',
    '-days',
    '20',
    '-extfile',
    file('seal.ext'),
    '-out',
    file('seal.crt'),
  );
  // The responder's database (openssl ca's index format): the seal certificate, valid.
  const expiry = execFileSync('openssl', ['x509', '-in', file('seal.crt'), '-noout', '-enddate'], { encoding: 'utf8' })
    .trim()
    .replace(/^notAfter=/, '');
  const end = new Date(expiry);
  const stamp = `${String(end.getUTCFullYear()).slice(2)}${[end.getUTCMonth() + 1, end.getUTCDate(), end.getUTCHours(), end.getUTCMinutes(), end.getUTCSeconds()].map((n) => String(n).padStart(2, '0')).join('')}Z`;
  fs.writeFileSync(file('index.txt'), `V\t${stamp}\t\t1001\tunknown\t/CN=Local Test Seal\n`);
  const p12Password = 'test-pass';
  openssl('pkcs12', '-export', '-inkey', file('seal.key'), '-in', file('seal.crt'), '-certfile', file('ca.crt'), '-out', file('seal.p12'), '-passout', `pass:${p12Password}`);

  return {
    directory,
    p12Path: file('seal.p12'),
    p12Password,
    caPath: file('ca.crt'),
    ocspUrl,
    get requests() {
      return state.requests;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async start() {
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    async close() {
      if (server.listening) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
