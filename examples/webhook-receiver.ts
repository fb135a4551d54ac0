/**
 * A webhook receiver: verifies each delivery's signature over the raw body, refuses old
 * timestamps (replays), and handles each delivery exactly once however often it arrives (the
 * service retries until it gets a 2xx, and a redelivery carries the same id). Processed ids are
 * kept in an append-only file, so a restarted receiver still recognises them.
 *
 *   WEBHOOK_SECRET=whsec_… PORT=3000 STORE=deliveries.jsonl node examples/webhook-receiver.ts
 *
 * The service calls it from its own network: for a receiver on your machine, run the service with
 * WEBHOOK_ALLOW_PRIVATE=true (development only) and create the webhook with
 * `POST /api/v1/key/webhooks { "url": "http://127.0.0.1:3000/hook" }`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { report } from './shared.ts';

/** The body the service POSTs (README, "Webhooks"). */
type Delivery = { id: string; type: string; occurredAt: string; teamId: string; envelopeId: string | null; sequence: number; data: Record<string, unknown> };

const secret = process.env.WEBHOOK_SECRET ?? '';
if (!secret.startsWith('whsec_')) {
  console.error('Set WEBHOOK_SECRET to the webhook’s secret (whsec_…), shown once when it was created or rotated.');
  process.exit(1);
}
const storePath = process.env.STORE ?? 'webhook-deliveries.jsonl';
const TOLERANCE_SECONDS = 300;
const MAX_BODY_BYTES = 1024 * 1024;

// The ids handled so far: one JSON line each, written before the 2xx is answered.
const handled = new Set<string>(
  fs.existsSync(storePath)
    ? fs
        .readFileSync(storePath, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { id: string }).id)
    : [],
);

/** `t=<unix seconds>,v1=<hex>[,v1=<hex>]`: fresh, and some v1 is the HMAC of "<t>.<raw body>" (two during a secret rotation). */
function verified(header: string | undefined, body: Buffer): boolean {
  const parts = (header ?? '').split(',').map((part) => part.split('=', 2) as [string, string | undefined]);
  const timestamp = parts.find(([name]) => name === 't')?.[1];
  const age = Math.abs(Date.now() / 1000 - Number(timestamp));
  if (timestamp === undefined || !Number.isFinite(age) || age > TOLERANCE_SECONDS) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
  return parts.some(([name, value]) => {
    if (name !== 'v1') return false;
    const given = Buffer.from(value ?? '', 'hex');
    // Constant time: a byte-by-byte comparison would tell an attacker how much of a guess was right.
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/** What this receiver does with an event: here, record it. Runs once per delivery id. */
function handle(delivery: Delivery): void {
  fs.appendFileSync(storePath, `${JSON.stringify({ id: delivery.id, type: delivery.type, envelopeId: delivery.envelopeId, sequence: delivery.sequence })}\n`);
  handled.add(delivery.id);
}

const server = http.createServer((request, response) => {
  const chunks: Buffer[] = [];
  let size = 0;
  request.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) request.destroy();
    else chunks.push(chunk);
  });
  request.on('end', () => {
    const body = Buffer.concat(chunks);
    if (request.method !== 'POST' || !verified(request.headers['x-envelope-signature'] as string | undefined, body)) {
      report('rejected', { reason: request.method !== 'POST' ? 'method' : 'signature' });
      response.writeHead(401).end();
      return;
    }
    const delivery = JSON.parse(body.toString('utf8')) as Delivery;
    if (handled.has(delivery.id)) {
      // A retry or a redelivery of what was already handled: acknowledge it, do nothing again.
      report('duplicate', { id: delivery.id, type: delivery.type });
      response.writeHead(200).end();
      return;
    }
    try {
      handle(delivery);
    } catch (error) {
      // Not handled: a 5xx makes the service try again later.
      report('failed', { id: delivery.id, error: (error as Error).message });
      response.writeHead(503).end();
      return;
    }
    report('received', { id: delivery.id, type: delivery.type, envelopeId: delivery.envelopeId, sequence: delivery.sequence });
    response.writeHead(200).end();
  });
});

server.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address() as AddressInfo;
  report('listening', { url: `http://${address}:${port}/hook` });
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
