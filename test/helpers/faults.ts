/**
 * What the fault tests share: an ORM on a private database (to seed and to inspect), teams, the
 * invariants checked after every fault (every referenced blob exists, one seal per document, every
 * outbox row settled), and small waiting helpers.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/postgresql';
import { createOrmConfig } from '../../mikro-orm.config.ts';
import { createTeam } from '../../src/domain/team/team.service.ts';
import type { TestApp } from './harness.ts';

export async function openOrm(databaseUrl: string, poolMax = 2): Promise<MikroORM> {
  return MikroORM.init(createOrmConfig({ clientUrl: databaseUrl, poolMax, acquireTimeoutMs: 5_000 }));
}

export type FaultTeam = { teamId: string; apiKey: string; keyId: string };

export async function seedTeamIn(orm: MikroORM): Promise<FaultTeam> {
  const created = await createTeam(orm.em.fork(), { name: `Faults ${Math.random().toString(36).slice(2, 8)}` });
  return { teamId: created.teamId, apiKey: created.apiKey, keyId: created.keyId };
}

/**
 * The shape the shared test helpers (restClient, buildEnvelope, signAndComplete, …) take: they only
 * use the URL (and the ORM, to read rows).
 */
export function asTestApp(url: string, orm: MikroORM): TestApp {
  return { url, orm } as unknown as TestApp;
}

export async function waitUntil<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Where the blob store keeps a file (src/shared/blob-store/index.ts): DATA_DIR/blobs/<aa>/<sha256>. */
export function blobPath(dataDir: string, sha256: string): string {
  return path.join(dataDir, 'blobs', sha256.slice(0, 2), sha256);
}

/** Every blob a row names (originals, sealed files) that is not on disk: must be none. */
export async function missingBlobs(orm: MikroORM, dataDir: string): Promise<string[]> {
  const rows = await orm.em.fork().execute<{ id: string; content_sha256: string; sealed_sha256: string | null }[]>(`select id, content_sha256, sealed_sha256 from document`);
  const missing: string[] = [];
  for (const row of rows) {
    if (!fs.existsSync(blobPath(dataDir, row.content_sha256))) missing.push(`${row.id} original ${row.content_sha256}`);
    if (row.sealed_sha256 !== null && !fs.existsSync(blobPath(dataDir, row.sealed_sha256))) missing.push(`${row.id} sealed ${row.sealed_sha256}`);
  }
  return missing;
}

/** Files in DATA_DIR/blobs/tmp (uploads and seals being staged). */
export function stagingFiles(dataDir: string): string[] {
  const directory = path.join(dataDir, 'blobs', 'tmp');
  return fs.existsSync(directory) ? fs.readdirSync(directory) : [];
}

/** artefact.sealed audit events per document of the given envelopes (one each is the promise). */
export async function sealEventsPerDocument(orm: MikroORM, envelopeIds: string[]): Promise<Map<string, number>> {
  const rows = await orm.em.fork().execute<{ document_id: string; events: string }[]>(
    `select d.id as document_id, count(a.id) as events
       from document d left join audit_event a on a.stream_id = d.envelope_id and a.type = 'artefact.sealed' and a.details ->> 'documentId' = d.id::text
      where d.envelope_id = any(?::uuid[])
      group by d.id`,
    [`{${envelopeIds.join(',')}}`],
  );
  return new Map(rows.map((row) => [row.document_id, Number(row.events)]));
}

/** Outbox rows not yet settled (neither processed nor failed), by topic. */
export async function pendingOutbox(orm: MikroORM): Promise<Record<string, number>> {
  const rows = await orm.em
    .fork()
    .execute<{ topic: string; count: string }[]>(`select topic, count(*) as count from outbox_message where processed_at is null and failed_at is null group by topic`);
  return Object.fromEntries(rows.map((row) => [row.topic, Number(row.count)]));
}

export async function failedOutbox(orm: MikroORM): Promise<{ topic: string; last_error: string }[]> {
  return orm.em.fork().execute(`select topic, last_error from outbox_message where failed_at is not null`);
}

export const MAIL_TOPICS = ['signing.invitation', 'envelope.completed.notice', 'envelope.closed.notice', 'recipient.handover.notice', 'signing.reminder'];

/** The ids of a team's mail rows in the outbox; a mail's Message-ID is `<id>@<public host>` (mailMessageId). */
export async function mailOutboxIds(orm: MikroORM, teamId: string, topics: string[] = MAIL_TOPICS): Promise<string[]> {
  const rows = await orm.em.fork().execute<{ id: string }[]>(`select id from outbox_message where topic = any(?::text[]) and payload ->> 'teamId' = ?`, [`{${topics.join(',')}}`, teamId]);
  return rows.map((row) => row.id);
}

export type GatedReceiver = {
  url: string;
  /** Requests answered 200 so far (headers and parsed body). */
  answered: { headers: Record<string, string | string[] | undefined>; json: any }[];
  /** Requests being held right now. */
  waiting(): number;
  /** Until released, requests are taken in but not answered. */
  hold(): void;
  release(): void;
  close(): Promise<void>;
};

/** A webhook receiver whose answers can be held back (the worker is then inside the delivery). */
export async function startGatedReceiver(): Promise<GatedReceiver> {
  const http = await import('node:http');
  const answered: GatedReceiver['answered'] = [];
  let open = true;
  const waiting: (() => void)[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const answer = () => {
        if (response.destroyed) return;
        answered.push({ headers: request.headers, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        response.statusCode = 200;
        response.end('{}');
      };
      if (open) answer();
      else waiting.push(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`,
    answered,
    waiting: () => waiting.length,
    hold: () => void (open = false),
    release() {
      open = true;
      for (const answer of waiting.splice(0)) answer();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A valid PDF of `pages` pages padded to about `bytes` bytes (an embedded file of random bytes: incompressible). */
export async function paddedPdf(options: { pages: number; bytes: number }): Promise<Uint8Array> {
  const { PDFDocument } = await import('pdf-lib');
  const { randomBytes } = await import('node:crypto');
  const document = await PDFDocument.create();
  for (let index = 0; index < options.pages; index += 1) document.addPage([595, 842]).drawRectangle({ x: 20, y: 20, width: 40, height: 40 });
  if (options.bytes > 4096) await document.attach(randomBytes(options.bytes), 'padding.bin', { mimeType: 'application/octet-stream' });
  return document.save();
}

export type RawUpload = { socket: import('node:net').Socket; sent: number; total: number; writeMore(bytes: number): void; response: Promise<string> };

/**
 * A multipart upload of `pdf` to REST, written by hand on a raw socket: only the head and the
 * first `firstBytes` of the file are sent; `writeMore` sends more. The response (whatever
 * arrives before the socket closes) is collected as text.
 */
export async function startRawUpload(url: string, apiKey: string, envelopeId: string, pdf: Uint8Array, firstBytes: number): Promise<RawUpload> {
  const net = await import('node:net');
  const target = new URL(url);
  const boundary = `raw-${Math.random().toString(36).slice(2)}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="document"; filename="raw.pdf"\r\nContent-Type: application/pdf\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const body = Buffer.concat([head, Buffer.from(pdf), tail]);
  const socket = net.connect({ host: target.hostname, port: Number(target.port) });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.on('error', () => undefined);
  let response = '';
  socket.on('data', (chunk: Buffer) => (response += chunk.toString('latin1')));
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(response)));
  socket.write(
    `POST /api/v1/key/envelopes/${envelopeId}/documents HTTP/1.1\r\nHost: ${target.host}\r\nX-Service-Api-Key: ${apiKey}\r\n` +
      `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
  );
  const upload: RawUpload = {
    socket,
    sent: 0,
    total: body.length,
    writeMore(bytes: number) {
      const next = Math.min(body.length, upload.sent + bytes);
      if (next > upload.sent && !socket.destroyed) socket.write(body.subarray(upload.sent, next));
      upload.sent = next;
    },
    response: closed,
  };
  upload.writeMore(head.length + firstBytes);
  return upload;
}
