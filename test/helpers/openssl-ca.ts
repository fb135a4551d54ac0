import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * What the test PKIs share (test/helpers/pki.ts for the seal, test/helpers/csc-provider.ts for a
 * trust service provider, test/helpers/softhsm.ts for a token's certificate,
 * test/helpers/multi-signed.ts for signers and their CRL): a certification authority made with
 * openssl in a directory, end-entity certificates it issues, the responder's database in
 * `openssl ca`'s index format (and the CRL `openssl ca` makes from it), and an OCSP responder
 * (`openssl ocsp` answering each request, behind node:http on the loopback) that can be stopped
 * and started again on the same port.
 */
export type OpensslCa = {
  directory: string;
  caCertPath: string;
  caKeyPath: string;
  /** Runs openssl in the directory; throws on failure. */
  run(...args: string[]): void;
  /**
   * Issues a certificate to a new RSA key: `extensions` are openssl extension lines
   * (`keyUsage=…`, `1.3.6.1.5.5.7.1.3=DER:…`). The certificate is entered in the responder's
   * index as valid. Returns the files' paths.
   */
  issue(options: { name: string; subject: string; serialHex: string; days: number; extensions: string[] }): { keyPath: string; certPath: string };
  /** Marks the certificate with this serial revoked in the responder's index (OCSP then says so). */
  revoke(serialHex: string, at?: Date): void;
  /** Writes the CA's CRL (PEM, sha256, valid 7 days) from the index as it stands; returns its path. */
  writeCrl(): string;
};

/** `YYMMDDHHMMSSZ`, the time format of openssl's index. */
function indexTime(date: Date): string {
  return `${String(date.getUTCFullYear()).slice(2)}${[date.getUTCMonth() + 1, date.getUTCDate(), date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()].map((n) => String(n).padStart(2, '0')).join('')}Z`;
}

export function createOpensslCa(options: { directory: string; subject: string; days?: number }): OpensslCa {
  const { directory } = options;
  const file = (name: string) => path.join(directory, name);
  const run = (...args: string[]) => {
    execFileSync('openssl', args, { stdio: 'ignore', cwd: directory });
  };
  run(
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
    String(options.days ?? 30),
    '-subj',
    options.subject,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  fs.writeFileSync(file('index.txt'), '');
  type Entry = { status: 'V' | 'R'; expiry: string; revokedAt: string; serial: string; subject: string };
  const entries: Entry[] = [];
  const writeIndex = () =>
    fs.writeFileSync(file('index.txt'), entries.map((entry) => `${entry.status}\t${entry.expiry}\t${entry.revokedAt}\t${entry.serial}\tunknown\t${entry.subject}\n`).join(''));
  return {
    directory,
    caCertPath: file('ca.crt'),
    caKeyPath: file('ca.key'),
    run,
    issue({ name, subject, serialHex, days, extensions }) {
      const keyPath = file(`${name}.key`);
      const certPath = file(`${name}.crt`);
      fs.writeFileSync(file(`${name}.ext`), [...extensions, ''].join('\n'));
      // -utf8: a person's name is rarely ASCII only.
      run('req', '-utf8', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyPath, '-out', file(`${name}.csr`), '-subj', subject);
      run(
        'x509',
        '-req',
        '-in',
        file(`${name}.csr`),
        '-CA',
        file('ca.crt'),
        '-CAkey',
        file('ca.key'),
        '-set_serial',
        `0x${serialHex}`,
        '-days',
        String(days),
        '-extfile',
        file(`${name}.ext`),
        '-out',
        certPath,
      );
      const expiry = execFileSync('openssl', ['x509', '-in', certPath, '-noout', '-enddate'], { encoding: 'utf8' })
        .trim()
        .replace(/^notAfter=/, '');
      entries.push({ status: 'V', expiry: indexTime(new Date(expiry)), revokedAt: '', serial: serialHex.toUpperCase(), subject });
      writeIndex();
      return { keyPath, certPath };
    },
    revoke(serialHex, at = new Date()) {
      const entry = entries.find((candidate) => candidate.serial === serialHex.toUpperCase());
      if (entry === undefined) throw new Error(`no certificate with serial ${serialHex}`);
      entry.status = 'R';
      entry.revokedAt = indexTime(at);
      writeIndex();
    },
    writeCrl() {
      if (!fs.existsSync(file('ca.cnf'))) {
        fs.writeFileSync(file('crlnumber'), '01\n');
        fs.writeFileSync(
          file('ca.cnf'),
          [
            '[ ca ]',
            'default_ca = local',
            '[ local ]',
            `database = ${file('index.txt')}`,
            `crlnumber = ${file('crlnumber')}`,
            'default_md = sha256',
            'default_crl_days = 7',
            `certificate = ${file('ca.crt')}`,
            `private_key = ${file('ca.key')}`,
          ].join('\n'),
        );
      }
      run('ca', '-config', file('ca.cnf'), '-gencrl', '-out', file('ca.crl.pem'));
      return file('ca.crl.pem');
    },
  };
}

export type OcspResponder = {
  url: string;
  /** OCSP requests answered so far. */
  readonly requests: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
};

/** An OCSP responder for the CA's index: each request is answered by `openssl ocsp`, signed by the CA itself. */
export async function startOcspResponder(ca: Pick<OpensslCa, 'directory' | 'caCertPath' | 'caKeyPath'>): Promise<OcspResponder> {
  const file = (name: string) => path.join(ca.directory, name);
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
        ['ocsp', '-index', file('index.txt'), '-rsigner', ca.caCertPath, '-rkey', ca.caKeyPath, '-CA', ca.caCertPath, '-reqin', query, '-respout', reply, '-ndays', '1'],
        { cwd: ca.directory },
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
  const stop = async () => {
    if (!server.listening) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    url: `http://127.0.0.1:${port}/ocsp`,
    get requests() {
      return state.requests;
    },
    stop,
    async start() {
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    close: stop,
  };
}
