/**
 * `npm run mcp`: the MCP server over stdio, for clients that start a local process (Claude
 * Desktop, IDEs). It holds no tools of its own and opens no database: it relays tools/list and
 * tools/call to a running service's `/mcp` over HTTP with the team key, so the tools, their
 * schemas, their tenancy and their errors are exactly the service's (docs/mcp.md).
 *
 *   ENVELOPE_URL=https://sign.example.com ENVELOPE_API_KEY=… npm run mcp
 *
 * stdout carries the protocol only; anything for a person goes to stderr.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const MCP_PATH = '/mcp';

/** ENVELOPE_URL and ENVELOPE_API_KEY, or one line naming what is wrong. */
function settings(environment: NodeJS.ProcessEnv): { endpoint: URL; apiKey: string } | { problem: string } {
  const apiKey = environment.ENVELOPE_API_KEY?.trim() ?? '';
  if (apiKey === '') return { problem: 'ENVELOPE_API_KEY must be set to a team API key (npm run cli -- key create --team TEAM_ID).' };
  const base = environment.ENVELOPE_URL?.trim() || 'http://localhost:4000';
  let endpoint: URL;
  try {
    endpoint = new URL(MCP_PATH, base.endsWith('/') ? base : `${base}/`);
  } catch {
    return { problem: `ENVELOPE_URL is not a URL: ${base}` };
  }
  if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:') return { problem: `ENVELOPE_URL must be an http(s) URL: ${base}` };
  return { endpoint, apiKey };
}

const found = settings(process.env);
if ('problem' in found) {
  console.error(found.problem);
  process.exit(1);
}
const { endpoint, apiKey } = found;

// The service's own MCP face, as its client: every call carries the key, as every REST call does.
const upstream = new Client({ name: 'envelope-service-stdio', version: '1.0.0' });
try {
  await upstream.connect(new StreamableHTTPClientTransport(endpoint, { requestInit: { headers: { 'x-service-api-key': apiKey } } }));
} catch (error) {
  // A refused key (401) lands here too: the service answered Auth.InvalidApiKey.
  console.error(`Could not reach the envelope service's MCP endpoint at ${endpoint.href} with this key: ${(error as Error).message}`);
  process.exit(1);
}

const server = new Server(upstream.getServerVersion() ?? { name: 'envelope-service', version: '1.0.0' }, {
  capabilities: { tools: {} },
  instructions: upstream.getInstructions(),
});
server.setRequestHandler(ListToolsRequestSchema, (request) => upstream.listTools(request.params));
// Tool failures arrive as the service's isError results (the API's error names) and pass through unchanged.
server.setRequestHandler(CallToolRequestSchema, (request) => upstream.callTool(request.params));

const close = async () => {
  await server.close();
  await upstream.close();
  process.exit(0);
};
process.stdin.on('end', () => void close());
process.on('SIGTERM', () => void close());
process.on('SIGINT', () => void close());

await server.connect(new StdioServerTransport());
