import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A local RFC 3161 timestamp authority built on `openssl ts -reply`, with its own self-signed
 * certificate (extended key usage timeStamping), served over HTTP as real TSAs are.
 */
export async function startLocalTsa(): Promise<{ url: string; requests: number; close(): Promise<void> }> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'tsa-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      path.join(directory, 'tsa.key'),
      '-out',
      path.join(directory, 'tsa.crt'),
      '-days',
      '30',
      '-subj',
      '/CN=Local Test TSA',
      '-addext',
      'extendedKeyUsage=critical,timeStamping',
      '-addext',
      'keyUsage=critical,digitalSignature',
    ],
    { stdio: 'ignore' },
  );
  fs.writeFileSync(path.join(directory, 'serial'), '01\n');
  fs.writeFileSync(
    path.join(directory, 'tsa.cnf'),
    [
      '[ tsa ]',
      'default_tsa = tsa_config1',
      '[ tsa_config1 ]',
      `dir = ${directory}`,
      'serial = $dir/serial',
      'signer_cert = $dir/tsa.crt',
      'certs = $dir/tsa.crt',
      'signer_key = $dir/tsa.key',
      'signer_digest = sha256',
      'default_policy = 1.2.3.4.1',
      'digests = sha256',
      'accuracy = secs:1',
      'ess_cert_id_alg = sha256',
      '',
    ].join('\n'),
  );
  let counter = 0;
  let replies: Promise<void> = Promise.resolve();
  const state = { requests: 0 };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      state.requests += 1;
      const query = path.join(directory, `q${++counter}.tsq`);
      const reply = path.join(directory, `r${counter}.tsr`);
      fs.writeFileSync(query, Buffer.concat(chunks));
      // One `openssl ts -reply` at a time: each reads and rewrites the serial file, and two at once
      // (a seal's signature timestamp beside another's document timestamp) make one answer a
      // rejection (status 2) on a busy machine.
      replies = replies.then(
        () =>
          new Promise<void>((done) => {
            execFile('openssl', ['ts', '-reply', '-config', path.join(directory, 'tsa.cnf'), '-queryfile', query, '-out', reply], (error) => {
              if (error) response.writeHead(500).end();
              else response.writeHead(200, { 'content-type': 'application/timestamp-reply' }).end(fs.readFileSync(reply));
              done();
            });
          }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/tsa`,
    get requests() {
      return state.requests;
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
