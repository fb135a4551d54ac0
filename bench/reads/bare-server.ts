/**
 * The bare peer, run as its own process by bench/reads.ts: node:http and a pg pool (10
 * connections, as ours), one SQL statement per request, no framework. It answers exactly two
 * requests, with the same bytes our service gives for them:
 *
 * - POST /graphql with GRAPHQL_PAGE_QUERY (any other query text is refused): `{"data":...}`;
 * - GET /api/v1/key/envelopes/{id}?includeDocuments=true, and GET /api/v1/key/envelopes/{id} (the
 *   envelope alone): `{"version","success","payload"}`.
 *
 * It authenticates the X-Service-Api-Key header the way the service does (SHA-256, looked up in
 * the same statement), so the floor it shows includes the tenant check. The statements are named
 * (prepared once per connection), as a hand-written handler would do.
 *
 *   DATABASE_URL=postgres://... PORT=4321 node bench/reads/bare-server.ts
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import pg from 'pg';
import { BARE_ENVELOPE_LIGHT_SQL, BARE_ENVELOPE_SQL, BARE_PAGE_SQL, GRAPHQL_PAGE_QUERY } from './queries.ts';

const connectionString = process.env.DATABASE_URL;
const port = Number(process.env.PORT);
if (!connectionString || !port) {
  console.error('DATABASE_URL and PORT are required');
  process.exit(1);
}

const pool = new pg.Pool({ connectionString, max: 10 });
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const envelopePath = /^\/api\/v1\/key\/envelopes\/([^/?]+)(\?includeDocuments=true)?$/;

const keyHash = (request: http.IncomingMessage) =>
  createHash('sha256')
    .update(String(request.headers['x-service-api-key'] ?? '').trim(), 'utf8')
    .digest('hex');

function send(response: http.ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

function readBody(request: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

async function envelopePage(request: http.IncomingMessage, response: http.ServerResponse) {
  let body: { query?: unknown; variables?: { first?: unknown } };
  try {
    body = JSON.parse(await readBody(request));
  } catch {
    return send(response, 400, { errors: [{ message: 'the body is not JSON' }] });
  }
  const first = body.variables?.first;
  if (body.query !== GRAPHQL_PAGE_QUERY || !Number.isInteger(first) || (first as number) < 1 || (first as number) > 100) {
    return send(response, 400, { errors: [{ message: 'this handler answers only the benchmark page query' }] });
  }
  const { rows } = await pool.query({ name: 'envelope-page', text: BARE_PAGE_SQL, values: [keyHash(request), first] });
  if (!rows[0].authenticated) return send(response, 200, { errors: [{ message: 'Auth.InvalidApiKey' }] });
  send(response, 200, { data: { envelopes: { nodes: rows[0].nodes } } });
}

async function envelope(request: http.IncomingMessage, response: http.ServerResponse, envelopeId: string, withDocuments: boolean) {
  const statement = withDocuments ? { name: 'envelope-with-documents', text: BARE_ENVELOPE_SQL } : { name: 'envelope-alone', text: BARE_ENVELOPE_LIGHT_SQL };
  const { rows } = uuidPattern.test(envelopeId) ? await pool.query({ ...statement, values: [keyHash(request), envelopeId] }) : { rows: [] };
  if (rows.length === 0) {
    return send(response, 404, { version: '1', success: false, error: { name: 'Envelope.NotFound', description: 'No such envelope.', context: {} } });
  }
  send(response, 200, { version: '1', success: true, payload: rows[0].payload });
}

const server = http.createServer((request, response) => {
  const match = request.method === 'GET' ? envelopePath.exec(request.url ?? '') : null;
  const handled =
    request.method === 'POST' && request.url === '/graphql'
      ? envelopePage(request, response)
      : match
        ? envelope(request, response, decodeURIComponent(match[1]), match[2] !== undefined)
        : request.url === '/healthz'
          ? Promise.resolve(send(response, 200, { status: 'ok' }))
          : Promise.resolve(send(response, 404, { error: 'not found' }));
  handled.catch((error: Error) => send(response, 500, { error: error.message }));
});
server.listen(port, '127.0.0.1');

async function shutdown() {
  server.close();
  server.closeAllConnections();
  await pool.end();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown());
process.on('SIGINT', () => void shutdown());
