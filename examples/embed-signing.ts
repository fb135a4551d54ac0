/**
 * Embedded signing: your own web page shows the signing page with the service's drop-in,
 * `<envelope-signing>`, for a signer you have authenticated yourself. This script is a tiny
 * integrator application: each visit to its page asks the service (server side, with the team
 * key) for a one-use signing URL for the recipient, framed by this page's origin and returning to
 * it, and serves a page that embeds it and listens to what the signing page tells it.
 *
 *   ENVELOPE_API_KEY=… PORT=3000 node examples/embed-signing.ts ENVELOPE_ID RECIPIENT_ID
 *   then open http://localhost:3000/
 *
 * The recipient's agent should be embedded (`info.embedded: true`: never mailed an invitation),
 * and the envelope sent. This page's origin is added to the team's `embedding.frameOrigins` at
 * start (production: set HOST_ORIGIN to your application's https origin; once is enough).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, apiKey, type JsonBody, report, serviceUrl } from './shared.ts';

const [envelopeId, recipientId] = process.argv.slice(2);
if (!envelopeId || !recipientId) {
  console.error('usage: node examples/embed-signing.ts ENVELOPE_ID RECIPIENT_ID');
  process.exit(1);
}

/** A REST call with the team key: never from the browser, which must not hold the key. */
async function call<Payload>(method: string, route: string, body?: unknown): Promise<Payload> {
  const response = await fetch(`${serviceUrl}/api/v1/key${route}`, {
    method,
    headers: { 'x-service-api-key': apiKey(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = (await response.json()) as { success: true; payload: Payload } | { success: false; error: { name: string; description: string; context: Record<string, unknown> } };
  if (!answer.success) throw new ApiError(answer.error.name, answer.error.description, answer.error.context);
  return answer.payload;
}

const escape = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

/** The host page: the drop-in from the service, the element, and the events sent back here to be logged. */
function hostPage(signingUrl: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign your contract</title></head>
<body>
<h1>Your contract</h1>
<script type="module" src="${escape(serviceUrl)}/embed.js"></script>
<envelope-signing id="signing" url="${escape(signingUrl)}" height="860"></envelope-signing>
<script>
  const signing = document.getElementById('signing');
  for (const name of ['ready', 'field_saved', 'completed', 'declined', 'delegated', 'error']) {
    signing.addEventListener(name, (event) => {
      fetch('/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, detail: event.detail }) });
    });
  }
</script>
</body></html>`;
}

const server = http.createServer((request, response) => {
  const url = new URL(request.url ?? '/', origin);
  if (request.method === 'POST' && url.pathname === '/events') {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const { name, detail } = JSON.parse(body) as { name: string; detail: Record<string, unknown> };
      report('host-event', { name, envelopeId: detail.envelopeId, recipientId: detail.recipientId });
      response.writeHead(204).end();
    });
    return;
  }
  if (url.pathname === '/signed') {
    // returnUrl: the frame comes back here after completing, declining or delegating.
    report('returned', { outcome: url.searchParams.get('event'), envelopeId: url.searchParams.get('envelopeId') });
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>Thank you</title><p id="thanks">Thank you, we have your signature.</p>');
    return;
  }
  if (url.pathname !== '/') {
    response.writeHead(404).end();
    return;
  }
  // A fresh URL per visit: it works once, within 5 minutes.
  const input: JsonBody<'postEnvelopesByEnvelopeIdRecipientsByRecipientIdSigningUrl'> = { frameOrigin: origin, returnUrl: `${origin}/signed`, locale: 'en-US' };
  call<{ url: string; expiresAt: string }>('POST', `/envelopes/${envelopeId}/recipients/${recipientId}/signing-url`, input).then(
    (made) => {
      // The URL names the service's PUBLIC_URL; shown here on the address this app reaches it by (the same in production).
      const signingUrl = `${serviceUrl}${new URL(made.url).pathname}`;
      report('signing-url', { expiresAt: made.expiresAt });
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(hostPage(signingUrl));
    },
    (error: unknown) => {
      // Not this recipient's turn, already signed, envelope closed…: said by name.
      report('refused', { error: error instanceof ApiError ? error.code : String(error) });
      response.writeHead(409, { 'content-type': 'text/plain; charset=utf-8' }).end(error instanceof Error ? error.message : String(error));
    },
  );
});

await new Promise<void>((resolve) => server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', resolve));
// The origin the browser sees; a development origin must be http://localhost[:port].
const origin = process.env.HOST_ORIGIN ?? `http://localhost:${(server.address() as AddressInfo).port}`;

// Allow this origin to frame the team's signing pages, keeping the origins already allowed.
const settings = await call<{ settings: { embedding: { frameOrigins: string[] | null } } }>('GET', '/team/settings');
const allowed = settings.settings.embedding.frameOrigins ?? [];
if (!allowed.includes(origin)) await call('PATCH', '/team/settings', { embedding: { frameOrigins: [...allowed, origin] } });
report('listening', { url: `${origin}/` });
process.on('SIGTERM', () => server.close(() => process.exit(0)));
