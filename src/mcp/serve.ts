/**
 * The MCP face over Streamable HTTP at `/mcp` (docs/mcp.md), served straight on Node beside the
 * REST face (server.ts routes it by path). Stateless: each POST carries one JSON-RPC message,
 * answered as JSON by a server built for that request's context, so any instance answers any
 * request and nothing is kept between them.
 *
 * A request is what a REST request is: authenticated by the team key (`X-Service-Api-Key`, or
 * `Authorization: Bearer <key>` as MCP clients send it), counted against the key's rate budget,
 * logged, measured and traced under its route; a failure before the MCP layer (no key, a bad
 * body, a spent budget) is the contract's error body with its status.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { type HeaderReader, openRequestContext, type ServingDependencies } from '../context.ts';
import { logRequest } from '../http/access-log.ts';
import { type Answer, sendAnswer } from '../http/answer.ts';
import { countedAnswer } from '../http/answer-counted.ts';
import { readJsonObject } from '../http/body.ts';
import { errorAnswer } from '../http/contract-body.ts';
import { corsHeaders, PREFLIGHT_HEADERS } from '../http/cors.ts';
import { observeRequest } from '../http/metrics.ts';
import { headerOf, nodeRequestMetadata } from '../http/request-metadata.ts';
import { setRequestId, setRequestRoute } from '../http/request-tracing.ts';
import { applySecurityHeaders, recordHeaders } from '../http/security-headers.ts';
import { MethodNotAllowedError } from '../shared/errors.ts';
import { normalizeError } from '../shared/normalize-error.ts';
import type { RequestMetadata } from '../shared/request-metadata.ts';
import { createMcpServer } from './server.ts';

export const MCP_PATH = '/mcp';

export type McpHttpServer = {
  /** Answers a request whose path is MCP_PATH. */
  serve(request: IncomingMessage, response: ServerResponse): void;
};

/** The key of a request: `X-Service-Api-Key`, else an `Authorization: Bearer` token. */
export function mcpHeaders(request: IncomingMessage): HeaderReader {
  return {
    get(name) {
      const value = headerOf(request, name) ?? null;
      if (name !== 'x-service-api-key' || (value !== null && value.trim() !== '')) return value;
      return /^Bearer\s+(\S+)\s*$/i.exec(headerOf(request, 'authorization') ?? '')?.[1] ?? null;
    },
  };
}

/** The Node request's headers as WHATWG Headers, for the SDK's transport. */
function webHeaders(request: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const each of Array.isArray(value) ? value : [value]) headers.append(name, each);
  }
  return headers;
}

export function createMcpHttpServer(dependencies: ServingDependencies): McpHttpServer {
  const { config, logger, metrics } = dependencies;

  function finish(request: IncomingMessage, response: ServerResponse, answered: { metadata: RequestMetadata; startedAt: bigint; answer: Answer }): void {
    const { metadata, startedAt, answer } = answered;
    const cors = corsHeaders((name) => headerOf(request, name));
    if (cors) Object.assign(answer.headers, cors);
    applySecurityHeaders(recordHeaders(answer.headers));
    answer.headers['x-request-id'] = metadata.requestId;
    const method = request.method ?? 'GET';
    observeRequest(metrics, { route: MCP_PATH, method, status: answer.status, startedAt });
    logRequest(logger, { metadata, method, pathname: MCP_PATH, status: answer.status, startedAt });
    void sendAnswer(response, answer);
  }

  async function answerMcp(request: IncomingMessage, metadata: RequestMetadata): Promise<Answer> {
    const headers = mcpHeaders(request);
    const context = await openRequestContext(dependencies, { headers, metadata });
    return countedAnswer({ rateLimiter: dependencies.rateLimiter, context, requestId: metadata.requestId, alwaysHttp200: false }, async () => {
      // Stateless: no session, so no server-to-client stream (GET) and nothing to end (DELETE).
      if (request.method !== 'POST') throw new MethodNotAllowedError(request.method ?? 'GET', ['POST']);
      // The key first: a request without a valid one learns nothing, not even the tool list.
      await context.caller();
      const message = await readJsonObject({ headers, body: Readable.toWeb(request) as ReadableStream<Uint8Array> });
      const server = createMcpServer(context);
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      try {
        const answered = await transport.handleRequest(new Request(`http://localhost${MCP_PATH}`, { method: 'POST', headers: webHeaders(request) }), { parsedBody: message });
        const answerHeaders: Record<string, string> = {};
        answered.headers.forEach((value, name) => {
          answerHeaders[name] = value;
        });
        return { status: answered.status, headers: answerHeaders, body: answered.body ? await answered.text() : null };
      } finally {
        await server.close();
      }
    });
  }

  return {
    serve(request, response) {
      const startedAt = process.hrtime.bigint();
      const metadata = nodeRequestMetadata(request, config.trustedProxyHops);
      setRequestId(request, metadata.requestId);
      setRequestRoute(request, MCP_PATH);
      if (request.method === 'OPTIONS') {
        finish(request, response, { metadata, startedAt, answer: { status: 204, headers: { ...PREFLIGHT_HEADERS }, body: null } });
        return;
      }
      answerMcp(request, metadata)
        .catch((error: unknown) => errorAnswer(normalizeError(error, logger), { requestId: metadata.requestId, alwaysHttp200: false }))
        .then((answer) => finish(request, response, { metadata, startedAt, answer }))
        .catch((error: unknown) => {
          logger.error({ err: error }, 'could not write an answer');
          if (!response.headersSent) response.writeHead(500);
          response.end();
        });
    },
  };
}
