/**
 * The MCP face (docs/mcp.md) driven by the SDK's own client: over Streamable HTTP at /mcp on the
 * service, and over stdio through `node src/mcp/stdio.ts` started against the same service, as an
 * MCP client (Claude Desktop, an IDE) starts it.
 */

import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unknownId } from './helpers/envelopes.ts';
import { restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { createReadyTemplate, type ReadyTemplate } from './helpers/templates.ts';

let app: TestApp;
let team: SeededTeam;
let otherTeam: SeededTeam;
let template: ReadyTemplate;
const clients: Client[] = [];

beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
  otherTeam = await seedTeam(app);
  template = await createReadyTemplate(app, team.apiKey, { name: 'Mutual NDA' });
});

afterAll(async () => {
  for (const client of clients) await client.close();
  await app?.close();
});

const TOOL_NAMES = ['list_templates', 'list_envelopes', 'get_envelope', 'create_envelope_from_template', 'send_envelope', 'remind', 'void_envelope', 'download_links', 'verify_envelope'];

/** A client over Streamable HTTP, the key as `Authorization: Bearer` (or the service's own header). */
async function httpClient(apiKey: string, header: 'bearer' | 'x-service-api-key' = 'bearer'): Promise<Client> {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  const headers: Record<string, string> = header === 'bearer' ? { authorization: `Bearer ${apiKey}` } : { 'x-service-api-key': apiKey };
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', app.url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

/** A client over stdio: `node src/mcp/stdio.ts` with the key and the service's address in its environment. */
async function stdioClient(apiKey: string): Promise<Client> {
  const client = new Client({ name: 'mcp-test-stdio', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['src/mcp/stdio.ts'],
      env: { PATH: process.env.PATH ?? '', ENVELOPE_URL: app.url, ENVELOPE_API_KEY: apiKey },
      stderr: 'pipe',
    }),
  );
  clients.push(client);
  return client;
}

/** A successful tool call's data. */
async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  // The text a model reads and the structured content say the same.
  expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual(result.structuredContent);
  return result.structuredContent;
}

/** A failed tool call's API error. */
async function callFailing(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ name: string; description: string; context: any }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError).toBe(true);
  const text = JSON.parse((result.content[0] as { text: string }).text) as { error: { name: string; description: string; context: any } };
  return text.error;
}

const ada = { identifier: 'buyer', agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }] };

/** The whole flow a model would run through a client: find the template, preview, create, send, read back. */
async function createAndSend(client: Client, name: string) {
  const templates = await call(client, 'list_templates');
  const listed = templates.templates.find((entry: any) => entry.id === template.templateId);
  expect(listed.recipients.map((role: any) => role.identifier)).toEqual(['buyer']);

  const preview = await call(client, 'create_envelope_from_template', { templateId: template.templateId, name, recipients: [ada], dryRun: true });
  expect(preview.dryRun.wouldSend).toBe(true);
  expect(preview.dryRun.problems).toEqual([]);
  expect(preview.dryRun.envelope.name).toBe(name);
  // A dry run makes nothing.
  expect((await call(client, 'list_envelopes', { q: name })).envelopes).toEqual([]);

  const created = await call(client, 'create_envelope_from_template', { templateId: template.templateId, name, recipients: [ada], context: { dealId: name } });
  expect(created.status).toBe('draft');
  const envelopeId = created.envelopeId as string;

  const sent = await call(client, 'send_envelope', { envelopeId });
  expect(sent.sent).toBe(true);
  const read = await call(client, 'get_envelope', { envelopeId });
  expect(read.envelope.status).toBe('sent');
  expect(read.envelope.progress).toMatchObject({ recipients: 1, completed: 0, pending: 1, waitingFor: [{ roleName: 'Buyer', names: ['Ada Lovelace'] }] });
  expect(read.envelope.recipients[0].agents[0].info.email).toBe('ada@example.com');
  return envelopeId;
}

describe('MCP over Streamable HTTP at /mcp', () => {
  it('lists the tools with schemas and marks the destructive ones', async () => {
    const client = await httpClient(team.apiKey);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...TOOL_NAMES].sort());
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    for (const name of ['send_envelope', 'void_envelope']) expect(byName.get(name)!.annotations?.destructiveHint).toBe(true);
    for (const name of ['list_templates', 'list_envelopes', 'get_envelope', 'download_links', 'verify_envelope']) expect(byName.get(name)!.annotations?.readOnlyHint).toBe(true);
    const create = byName.get('create_envelope_from_template')!;
    expect(create.inputSchema.properties).toHaveProperty('templateId');
    expect(create.inputSchema.properties).toHaveProperty('dryRun');
    expect(create.inputSchema.properties).toHaveProperty('recipients');
    expect(byName.get('list_envelopes')!.inputSchema.properties).toHaveProperty('recipientEmail');
  });

  it('creates and sends an envelope from a template and reads it back; REST sees the same envelope', async () => {
    const client = await httpClient(team.apiKey, 'x-service-api-key');
    const envelopeId = await createAndSend(client, 'NDA over HTTP');

    const rest = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}?includeRecipients=true`);
    expect(rest.body.payload.envelope.status).toBe('sent');
    expect(rest.body.payload.envelope.templateId).toBe(template.templateId);

    const found = await call(client, 'list_envelopes', { status: ['sent'], recipientEmail: 'ADA@example.com', context: { dealId: 'NDA over HTTP' } });
    expect(found.envelopes.map((envelope: any) => envelope.id)).toEqual([envelopeId]);
    expect(found.envelopes[0].progress.pending).toBe(1);

    // Nothing a tool answers is a recipient's signing link.
    const read = (await client.callTool({ name: 'get_envelope', arguments: { envelopeId, includeFields: true } })) as CallToolResult;
    expect(JSON.stringify(read)).not.toMatch(/\/sign\//);

    const links = await call(client, 'download_links', { envelopeId });
    expect(links.sealed).toBe(false);
    expect(links.documents).toHaveLength(1);
    expect(links.evidencePackage).toBeNull();
    expect(JSON.stringify(links)).not.toMatch(/\/sign\//);
    const fetched = await fetch(`${app.url}${new URL(links.documents[0].url).pathname}`);
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get('content-type')).toBe('application/pdf');
    expect(
      Buffer.from(await fetched.arrayBuffer())
        .subarray(0, 5)
        .toString(),
    ).toBe('%PDF-');

    const reminded = await call(client, 'remind', { envelopeId });
    expect(reminded.reminded).toEqual([expect.objectContaining({ recipientId: expect.any(String), channel: 'email' })]);
    expect((await callFailing(client, 'remind', { envelopeId })).name).toBe('Envelope.RemindTooSoon');

    const voided = await call(client, 'void_envelope', { envelopeId, reason: 'Terms changed' });
    expect(voided.envelope.status).toBe('voided');
    const closedLinks = await call(client, 'download_links', { envelopeId });
    expect(closedLinks.evidencePackage.url).toMatch(/\/api\/v1\/key\/downloads\//);
    const evidence = await fetch(`${app.url}${new URL(closedLinks.evidencePackage.url).pathname}`);
    expect(evidence.headers.get('content-type')).toBe('application/zip');
    await evidence.arrayBuffer();

    const verified = await call(client, 'verify_envelope', { envelopeId });
    expect(verified.verification).toMatchObject({ valid: true });
    expect(verified.verification.length).toBeGreaterThan(3);
    const restVerification = await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/audit/verify`);
    expect(restVerification.body.payload.verification.headHash).toBe(verified.verification.headHash);
  });

  it('another team’s key sees nothing of this team, and is told exactly what it is told about an unknown id', async () => {
    const envelopeId = (await call(await httpClient(team.apiKey), 'create_envelope_from_template', { templateId: template.templateId, recipients: [ada] })).envelopeId;
    const other = await httpClient(otherTeam.apiKey);
    expect((await call(other, 'list_templates')).templates).toEqual([]);
    expect((await call(other, 'list_envelopes')).envelopes).toEqual([]);
    for (const name of ['get_envelope', 'send_envelope', 'void_envelope', 'remind', 'download_links', 'verify_envelope']) {
      const foreign = await callFailing(other, name, { envelopeId });
      const unknown = await callFailing(other, name, { envelopeId: unknownId });
      expect(foreign.name).toBe('Envelope.NotFound');
      expect({ ...foreign, context: { ...foreign.context, envelopeId: null, requestId: null } }).toEqual({ ...unknown, context: { ...unknown.context, envelopeId: null, requestId: null } });
    }
    const jumpstart = await callFailing(other, 'create_envelope_from_template', { templateId: template.templateId, recipients: [ada] });
    expect(jumpstart.name).toBe('Template.NotFound');
    // The envelope is untouched: still a draft of its own team.
    expect((await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}`)).body.payload.envelope.status).toBe('draft');
  });

  it('answers failures as the API’s error names and descriptions', async () => {
    const client = await httpClient(team.apiKey);
    const draft = (await call(client, 'create_envelope_from_template', { templateId: template.templateId, recipients: [] })).envelopeId;
    // A role with nobody: the send's own refusal, every issue listed.
    const notSendable = await callFailing(client, 'send_envelope', { envelopeId: draft });
    expect(notSendable.name).toBe('Envelope.NotSendable');
    expect(notSendable.description).toMatch(/\w/);
    const dryRun = await call(client, 'send_envelope', { envelopeId: draft, dryRun: true });
    expect(dryRun.dryRun.wouldSend).toBe(false);
    expect(dryRun.dryRun.problems.map((problem: any) => problem.name)).toEqual(['Envelope.NotSendable']);
    expect((await callFailing(client, 'void_envelope', { envelopeId: draft })).name).toBe('Envelope.NotSent');

    const invalid = await callFailing(client, 'list_envelopes', { status: ['signed'], limit: 0 });
    expect(invalid.name).toBe('Request.Invalid');
    expect(invalid.context.issues.map((issue: any) => issue.path).sort()).toEqual(['limit', 'status[0]']);
    const unknownRole = await callFailing(client, 'create_envelope_from_template', { templateId: template.templateId, recipients: [{ identifier: 'seller', agents: [] }] });
    expect(unknownRole.name).toBe('Jumpstart.UnknownRecipient');
    const missingArgument = await callFailing(client, 'get_envelope', {});
    expect(missingArgument.name).toBe('Request.Invalid');
    expect(missingArgument.context.issues[0].path).toBe('envelopeId');
    // The draft is as it was.
    expect((await restClient(app, team.apiKey).get(`/envelopes/${draft}`)).body.payload.envelope.status).toBe('draft');
    // A tool this server never listed is the protocol's own error, not a tool result.
    await expect(client.callTool({ name: 'create_signing_url', arguments: { envelopeId: draft } })).rejects.toThrow(/Unknown tool: create_signing_url/);
  });

  it('refuses a request without a valid key before any MCP message is read, with the contract’s error body', async () => {
    const initialize = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
    const post = (headers: Record<string, string>) =>
      fetch(`${app.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(initialize),
      });
    const missing = await post({});
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as any).error.name).toBe('Auth.MissingApiKey');
    const wrong = await post({ authorization: 'Bearer not-a-key' });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as any).error.name).toBe('Auth.InvalidApiKey');
    // A body that is not JSON, and JSON that is not a JSON-RPC message: named refusals, never a 500.
    const notJson = await post({ 'x-service-api-key': team.apiKey, 'content-type': 'text/plain' });
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as any).error.name).toBe('Request.Invalid');
    const notRpc = await fetch(`${app.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-service-api-key': team.apiKey },
      body: JSON.stringify({ hello: 'world' }),
    });
    expect(notRpc.status).toBe(400);
    expect(((await notRpc.json()) as any).error.code).toBe(-32700);
    const get = await fetch(`${app.url}/mcp`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(get.status).toBe(405);
    expect(((await get.json()) as any).error.name).toBe('Route.MethodNotAllowed');
  });
});

describe('MCP requests and the key’s rate budget', () => {
  it('each POST to /mcp spends one request of the key’s budget, shared with REST; past it, 429 Request.RateLimited', async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '3' }, rateLimitsOwnCounters: true });
    try {
      const own = await seedTeam(limited);
      const list = () =>
        fetch(`${limited.url}/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${own.apiKey}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_envelopes', arguments: {} } }),
        });
      const first = await list();
      expect(first.status).toBe(200);
      expect(first.headers.get('x-ratelimit-remaining')).toBe('2');
      expect((await restClient(limited, own.apiKey).get('/envelopes')).headers.get('x-ratelimit-remaining')).toBe('1');
      expect((await list()).headers.get('x-ratelimit-remaining')).toBe('0');
      const refused = await list();
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await refused.json()) as any).error.name).toBe('Request.RateLimited');
    } finally {
      await limited.close();
    }
  });
});

// Each client starts a Node process of its own.
describe('MCP over stdio (npm run mcp)', { timeout: 90_000 }, () => {
  it('relays the service’s tools with the key: lists, creates and sends from a template, reads back; another team’s key sees nothing', async () => {
    const client = await stdioClient(team.apiKey);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...TOOL_NAMES].sort());
    expect(tools.find((tool) => tool.name === 'void_envelope')!.annotations?.destructiveHint).toBe(true);
    const envelopeId = await createAndSend(client, 'NDA over stdio');
    expect((await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}`)).body.payload.envelope.status).toBe('sent');

    const other = await stdioClient(otherTeam.apiKey);
    expect((await call(other, 'list_envelopes')).envelopes).toEqual([]);
    expect((await callFailing(other, 'get_envelope', { envelopeId })).name).toBe('Envelope.NotFound');
  });

  it('stops with one line naming the missing key or an unreachable service', async () => {
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['src/mcp/stdio.ts'], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.once('close', (code) => resolve({ code, stderr }));
      });
    const noKey = await run({ ENVELOPE_URL: app.url });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/ENVELOPE_API_KEY/);
    const badKey = await run({ ENVELOPE_URL: app.url, ENVELOPE_API_KEY: 'not-a-key' });
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toMatch(/Could not reach/);
  });
});
